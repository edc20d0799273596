//! `MaxCalibrator`: the running absolute maximum, per tensor or per channel.
//!
//! Per batch, `amax = max(|max(x)|, |min(x)|)` over every dimension except `axis` (negative axes
//! count from the end; an out-of-range axis reduces everything, and a one-element amax is
//! squeezed to a scalar — both as `reduce_amax` does), then `torch.max` with the previous amax.
//! NaN or inf in an amax is refused (AssertionError); a change of amax shape raises
//! `RuntimeError("amax shape changed!")`.

use super::quant::{fake_quantize, qparams_from_amax, QuantizerArgs};
use crate::error::{Error, Result, Stage};
use crate::observer::{ObserverKind, PlotSnapshot, QParams};
use crate::quant::ChannelIndexer;
use crate::tensor::Tensor;

crate::declare_params! {
    /// `MaxCalibrator(num_bits, axis, unsigned)` and the quantizer's attributes.
    pub struct MaxArgs {
        /// quantization axis (one amax per index along it); null = per tensor
        axis: Option<i64> = None; int(-64, 63), Data;
    }
    include { quantizer: QuantizerArgs }
}

/// The running amax.
#[derive(Debug, Clone, PartialEq)]
pub struct RunningAmax {
    /// The amax values and their (keepdim, possibly squeezed) shape; `None` before any data.
    pub amax: Option<(Vec<f32>, Vec<usize>)>,
    /// The channel axis of the amax (resolved against the tensor), if it is per channel.
    pub channel_axis: Option<usize>,
}

/// `(amax values, keepdim shape, channel axis)` of one batch (`reduce_amax`).
fn local_amax(axis: Option<i64>, x: &Tensor) -> Result<(Vec<f32>, Vec<usize>, Option<usize>)> {
    let ndim = x.ndim() as i64;
    let axis = axis
        .and_then(|a| (0..ndim).find(|&i| i == a || i - ndim == a))
        .map(|a| a as usize);
    let abs_max = |lo: f32, hi: f32| hi.abs().max(lo.abs());
    match axis {
        None => {
            if x.is_empty() {
                return Err(Error::framework(
                    "RuntimeError",
                    "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.",
                    Stage::Forward,
                ));
            }
            let (lo, hi) = x
                .data
                .iter()
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| {
                    (torch_min(a, v), torch_max(b, v))
                });
            // A full reduction is a 0-d (or squeezed one-element) amax.
            Ok((vec![abs_max(lo, hi)], Vec::new(), None))
        }
        Some(axis) => {
            let channels = x.shape[axis];
            if x.is_empty() {
                return Err(Error::input(format!(
                    "cannot take a per-channel amax of an empty tensor of shape {:?}",
                    x.shape
                )));
            }
            let ix = ChannelIndexer::new(&x.shape, axis);
            let mut lo = vec![f32::INFINITY; channels];
            let mut hi = vec![f32::NEG_INFINITY; channels];
            for (i, &v) in x.data.iter().enumerate() {
                let c = ix.channel(i);
                lo[c] = torch_min(lo[c], v);
                hi[c] = torch_max(hi[c], v);
            }
            let amax: Vec<f32> = lo.iter().zip(&hi).map(|(&a, &b)| abs_max(a, b)).collect();
            if amax.len() == 1 {
                return Ok((amax, Vec::new(), None));
            }
            let shape: Vec<usize> = (0..x.ndim())
                .map(|d| if d == axis { channels } else { 1 })
                .collect();
            Ok((amax, shape, Some(axis)))
        }
    }
}

/// torch's max/min propagate NaN.
fn torch_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.max(b)
    }
}

fn torch_min(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.min(b)
    }
}

/// ModelOpt's `MaxCalibrator`.
pub struct Max;

impl ObserverKind for Max {
    type Args = MaxArgs;
    type Config = MaxArgs;
    type State = RunningAmax;

    fn resolve(args: &MaxArgs, _unknown: &[String]) -> Result<MaxArgs> {
        Ok(args.clone())
    }

    fn init(_: &MaxArgs) -> RunningAmax {
        RunningAmax {
            amax: None,
            channel_axis: None,
        }
    }

    fn feed(state: &mut RunningAmax, cfg: &MaxArgs, batch: &Tensor) -> Result<()> {
        let (local, shape, axis) = local_amax(cfg.axis, batch)?;
        if local.iter().any(|v| v.is_nan()) {
            return Err(Error::framework(
                "AssertionError",
                "detected nan values in amax. nan in original tensor: tensor(True)",
                Stage::Forward,
            ));
        }
        if local.iter().any(|v| v.is_infinite()) {
            return Err(Error::framework(
                "AssertionError",
                "detected inf values in amax. inf in original tensor: tensor(True)",
                Stage::Forward,
            ));
        }
        state.amax = Some(match state.amax.take() {
            None => (local, shape),
            Some((old, old_shape)) => {
                if old_shape != shape || old.len() != local.len() {
                    return Err(Error::framework(
                        "RuntimeError",
                        "amax shape changed!",
                        Stage::Forward,
                    ));
                }
                (
                    old.iter()
                        .zip(&local)
                        .map(|(&a, &b)| torch_max(a, b))
                        .collect(),
                    shape,
                )
            }
        });
        state.channel_axis = axis;
        Ok(())
    }

    fn qparams(state: &RunningAmax, cfg: &MaxArgs) -> Result<QParams> {
        let (amax, _) = state.amax.as_ref().ok_or_else(|| {
            Error::input("MaxCalibrator has not collected any data (compute_amax() returns None)")
        })?;
        let mut q = qparams_from_amax(amax.clone(), state.channel_axis, &cfg.quantizer)?;
        if cfg.axis.is_some() && state.channel_axis.is_none() && amax.len() == 1 {
            q.notes.push(
                "the amax has one element and is squeezed to a scalar (reduce_amax), so it applies per tensor"
                    .into(),
            );
        }
        Ok(q)
    }

    /// Hand-written: no kernel fits some qparams (see [`super::quant::qdq_kernel`]).
    fn fake_quantize(cfg: &MaxArgs, x: &Tensor, q: &QParams) -> Result<Tensor> {
        fake_quantize(x, q, &cfg.quantizer)
    }

    fn qdq_kernel(
        cfg: &MaxArgs,
        shape: &[usize],
        q: &QParams,
    ) -> Option<Box<dyn crate::qdq::QdqKernel>> {
        super::quant::qdq_kernel(shape, q, &cfg.quantizer)
    }

    fn plot(state: &RunningAmax) -> PlotSnapshot {
        match &state.amax {
            Some((amax, _)) => PlotSnapshot {
                min_val: amax.iter().map(|a| -a).collect(),
                max_val: amax.clone(),
                histogram: None,
            },
            None => PlotSnapshot::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::Instance;
    use crate::params::Params;
    use crate::registry;

    fn instance(p: &str) -> Result<Instance> {
        let spec = registry::find("modelopt.MaxCalibrator")?;
        Instance::new(spec, &Params::from_json(p)?)
    }

    fn observe(p: &str, batches: &[Tensor]) -> Result<QParams> {
        let mut o = instance(p)?;
        for b in batches {
            o.feed(b)?;
        }
        o.qparams()
    }

    #[test]
    fn per_tensor_and_per_channel_amax() {
        let x = Tensor::new(vec![2, 3], vec![1.0, -4.0, 2.0, 0.5, 0.25, -0.75]).unwrap();
        let q = observe("{}", std::slice::from_ref(&x)).unwrap();
        assert_eq!(q.amax, Some(vec![4.0]));
        assert_eq!(q.scale, vec![4.0 / 127.0]);
        let q = observe(r#"{"axis": 0}"#, std::slice::from_ref(&x)).unwrap();
        assert_eq!(q.amax, Some(vec![4.0, 0.75]));
        assert_eq!(q.axis, Some(0));
        let q = observe(r#"{"axis": -1}"#, std::slice::from_ref(&x)).unwrap();
        assert_eq!(q.amax, Some(vec![1.0, 4.0, 2.0]));
        assert_eq!(q.axis, Some(1));
        // Out of range: reduces everything.
        let q = observe(r#"{"axis": 5}"#, std::slice::from_ref(&x)).unwrap();
        assert_eq!(q.amax, Some(vec![4.0]));
        assert_eq!(q.notes.len(), 1);
    }

    #[test]
    fn running_max_and_shape_change() {
        let a = Tensor::new(vec![2, 2], vec![1.0, -1.0, 3.0, 0.0]).unwrap();
        let b = Tensor::new(vec![2, 2], vec![-2.0, 0.0, 1.0, 0.0]).unwrap();
        let q = observe(r#"{"axis": 0}"#, &[a.clone(), b]).unwrap();
        assert_eq!(q.amax, Some(vec![2.0, 3.0]));
        let c = Tensor::new(vec![3, 2], vec![0.0; 6]).unwrap();
        let err = observe(r#"{"axis": 0}"#, &[a, c]).unwrap_err();
        assert_eq!(err.to_string(), "RuntimeError: amax shape changed!");
    }

    #[test]
    fn four_bit_fake_quant_uses_seven_levels() {
        let x = Tensor::from_vec(vec![-7.0, -3.4, 0.5, 3.5, 7.0]);
        let mut o = instance(r#"{"num_bits": 4}"#).unwrap();
        o.feed(&x).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.scale, vec![1.0]);
        let y = o.fake_quantize(&x, &q).unwrap();
        assert_eq!(y.data, vec![-7.0, -3.0, 0.0, 4.0, 7.0]);
    }

    proptest::proptest! {
        #[test]
        fn amax_is_the_largest_magnitude_whatever_the_split(
            data in proptest::collection::vec(-1e4f32..1e4, 1..300),
            split in 0usize..300,
        ) {
            let cut = split.min(data.len() - 1).max(1).min(data.len());
            let whole = observe("{}", &[Tensor::from_vec(data.clone())]).unwrap();
            let parts: Vec<Tensor> = [&data[..cut], &data[cut..]]
                .iter()
                .filter(|p| !p.is_empty())
                .map(|p| Tensor::from_vec(p.to_vec()))
                .collect();
            let split = observe("{}", &parts).unwrap();
            let want = data.iter().fold(0f32, |m, v| m.max(v.abs()));
            proptest::prop_assert_eq!(whole.amax.clone(), Some(vec![want]));
            proptest::prop_assert_eq!(split.amax, Some(vec![want]));
        }
    }
}
