use quantscope::observer::Observer;
use quantscope::observers::torch::histogram::HistogramObserver;
use quantscope::params::Params;
use quantscope::tensor::read_tensors;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let params = Params::from_json(&args[1]).unwrap();
    let mut obs = HistogramObserver::new(&params).unwrap();
    for p in &args[2..] {
        let bytes = std::fs::read(p).unwrap();
        let t = read_tensors(&bytes, p).unwrap().remove(0).tensor;
        obs.observe(&t).unwrap();
        println!("{}", serde_json::to_string(&obs.histogram()).unwrap());
    }
}
