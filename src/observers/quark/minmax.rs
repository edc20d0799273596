//! Quark's min/max observers: `PerTensorMinMaxObserver`, `PerChannelMinMaxObserver`,
//! `PerGroupMinMaxObserver`.
//!
//! State:
//! * Per tensor: running `min`/`max` (`torch.aminmax`, NaN propagates); `is_dynamic` keeps only
//!   the last batch.
//! * Per channel: `ch_axis` moved to the front, the rest flattened (a 1-d input is one value per
//!   channel), per-row min/max; running only while the channel count stays the same — a batch
//!   with a different count silently restarts the statistics.
//! * Per group: `ch_axis` swapped with the last axis, rows cut into groups of `group_size`
//!   (`dim[ch_axis] % group_size` must be 0, `−1` = the whole axis); **every batch overwrites**
//!   the statistics (it is a weight observer), so `is_dynamic` changes nothing.
//!
//! The search: [`super::qparams::calculate_qparams`] on that state (per group: int or fp8
//! qparams per group). Only `ch_axis`, `group_size` and `is_dynamic` decide what is collected.

use super::config::quark_params;
use super::dtype::{PerChannelDtype, UniformDtype};
use super::kernels::{group_layout, scaled_fake_quantize};
use super::qparams::{self, nan_max, nan_min};
use super::spec::{PerChannelScheme, PerGroupScheme, PerTensorScheme, QuarkConfig};
use super::{aminmax, build_qparams};
use crate::error::{Error, Result, Stage};
use crate::observer::{ObserverKind, PlotSnapshot, QParams};
use crate::qdq::QdqKernel;
use crate::tensor::Tensor;

quark_params! {
    /// The configuration `PerTensorMinMaxObserver` reads.
    pub struct PerTensorMinMaxArgs {
        dtype: UniformDtype = UniformDtype::Int8, Search;
        qscheme: PerTensorScheme = PerTensorScheme::PerTensor;
        symmetric: Some(true), Search;
        scale_type: Search;
        is_dynamic: false, Data;
        scale_format: None;
    }
}

quark_params! {
    /// The configuration `PerChannelMinMaxObserver` reads (`Int8PerChannelSpec`: asymmetric).
    pub struct PerChannelMinMaxArgs {
        dtype: PerChannelDtype = PerChannelDtype::Int8, Search;
        qscheme: PerChannelScheme = PerChannelScheme::PerChannel;
        symmetric: Some(false), Search;
        ch_axis: 0, Data;
        scale_type: Search;
        is_dynamic: false, Data;
        scale_format: None;
    }
}

quark_params! {
    /// The configuration `PerGroupMinMaxObserver` reads (`Int4PerGroupSpec`'s layout:
    /// `ch_axis=1`, `group_size=128`).
    pub struct PerGroupMinMaxArgs {
        dtype: UniformDtype = UniformDtype::Int8, Search;
        qscheme: PerGroupScheme = PerGroupScheme::PerGroup;
        symmetric: Some(true), Search;
        ch_axis: 1, Data;
        group_size: 128, Data;
        scale_type: Search;
        is_dynamic: false, Search;
        scale_format: None;
    }
}

/// Running per-tensor `min`/`max` (`+inf`/`−inf` before any data), as
/// `PerTensorMinMaxObserver.forward` keeps them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunningMinMax {
    pub min: f32,
    pub max: f32,
}

impl Default for RunningMinMax {
    fn default() -> Self {
        RunningMinMax {
            min: f32::INFINITY,
            max: f32::NEG_INFINITY,
        }
    }
}

impl RunningMinMax {
    /// True once a non-empty batch was seen.
    pub fn observed(&self) -> bool {
        !(self.min == f32::INFINITY && self.max == f32::NEG_INFINITY)
    }

    /// `forward(x)`: `aminmax(x)`, merged with the running values unless `dynamic`.
    pub fn feed(&mut self, data: &[f32], dynamic: bool) {
        if data.is_empty() {
            return;
        }
        let (lo, hi) = aminmax(data);
        if dynamic {
            (self.min, self.max) = (lo, hi);
        } else {
            self.min = nan_min(lo, self.min);
            self.max = nan_max(hi, self.max);
        }
    }

    /// The `min_val`/`max_val` buffers to report: empty before any data.
    pub fn buffers(&self) -> (Vec<f32>, Vec<f32>) {
        if self.observed() {
            (vec![self.min], vec![self.max])
        } else {
            (Vec::new(), Vec::new())
        }
    }

    /// A snapshot for plotting.
    pub fn plot(&self) -> PlotSnapshot {
        let (min_val, max_val) = self.buffers();
        PlotSnapshot {
            min_val,
            max_val,
            histogram: None,
        }
    }
}

/// `PerTensorMinMaxObserver`.
pub struct PerTensorMinMax;

impl ObserverKind for PerTensorMinMax {
    type Args = PerTensorMinMaxArgs;
    type Config = QuarkConfig;
    type State = RunningMinMax;

    fn resolve(args: &PerTensorMinMaxArgs, _: &[String]) -> Result<QuarkConfig> {
        args.quark_config()
    }

    fn init(_: &QuarkConfig) -> RunningMinMax {
        RunningMinMax::default()
    }

    fn feed(state: &mut RunningMinMax, spec: &QuarkConfig, batch: &Tensor) -> Result<()> {
        state.feed(&batch.data, spec.is_dynamic);
        Ok(())
    }

    fn qparams(state: &RunningMinMax, spec: &QuarkConfig) -> Result<QParams> {
        let sz = qparams::calculate_qparams(spec, &[state.min], &[state.max], true)?;
        let (min_val, max_val) = state.buffers();
        let mut q = build_qparams(spec, sz, min_val, max_val, || {
            qparams::step(spec, "the running min/max of every batch")
        });
        if !state.observed() {
            q.notes
                .push("no data observed: Quark returns its default qparams".to_string());
        }
        Ok(q)
    }

    /// Hand-written: no kernel fits some qparams (see [`super::qdq_kernel`]).
    fn fake_quantize(spec: &QuarkConfig, x: &Tensor, q: &QParams) -> Result<Tensor> {
        scaled_fake_quantize(spec, x, &q.scale, &q.zero_point)
    }

    fn qdq_kernel(spec: &QuarkConfig, _: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>> {
        super::qdq_kernel::kernel(spec, q)
    }

    fn plot(state: &RunningMinMax) -> PlotSnapshot {
        state.plot()
    }
}

/// Per-row `aminmax` of `data` laid out as `rows × len` by `row_of`.
fn row_min_max(data: &[f32], rows: usize, row_of: impl Fn(usize) -> usize) -> (Vec<f32>, Vec<f32>) {
    let mut lo = vec![f32::INFINITY; rows];
    let mut hi = vec![f32::NEG_INFINITY; rows];
    for (i, &v) in data.iter().enumerate() {
        let r = row_of(i);
        lo[r] = nan_min(lo[r], v);
        hi[r] = nan_max(hi[r], v);
    }
    (lo, hi)
}

/// A batch's shape as the per-channel and per-group observers see it (a 0-d tensor is `[1]`).
fn shape_of(batch: &Tensor) -> Vec<usize> {
    if batch.shape.is_empty() {
        vec![1]
    } else {
        batch.shape.clone()
    }
}

/// What `PerChannelMinMaxObserver` collects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerChannelState {
    pub min: Vec<f32>,
    pub max: Vec<f32>,
    /// `ch_axis` normalised against the last batch's rank.
    pub axis: Option<usize>,
    /// Restarts of the statistics, for the report.
    pub notes: Vec<String>,
}

/// `PerChannelMinMaxObserver`.
pub struct PerChannelMinMax;

impl ObserverKind for PerChannelMinMax {
    type Args = PerChannelMinMaxArgs;
    type Config = QuarkConfig;
    type State = PerChannelState;

    fn resolve(args: &PerChannelMinMaxArgs, _: &[String]) -> Result<QuarkConfig> {
        args.quark_config()
    }

    fn init(_: &QuarkConfig) -> PerChannelState {
        PerChannelState::default()
    }

    fn feed(state: &mut PerChannelState, spec: &QuarkConfig, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let shape = shape_of(batch);
        let axis = spec.axis_for(shape.len())?;
        let channels = shape[axis];
        let ix = crate::quant::ChannelIndexer::new(&shape, axis);
        let (lo, hi) = row_min_max(&batch.data, channels, |i| ix.channel(i));
        if !spec.is_dynamic && state.min.len() == channels {
            for c in 0..channels {
                state.min[c] = nan_min(state.min[c], lo[c]);
                state.max[c] = nan_max(state.max[c], hi[c]);
            }
        } else {
            if !state.min.is_empty() && !spec.is_dynamic {
                state.notes.push(format!(
                    "the channel count changed from {} to {channels}: Quark restarted the statistics",
                    state.min.len()
                ));
            }
            (state.min, state.max) = (lo, hi);
        }
        state.axis = Some(axis);
        Ok(())
    }

    fn qparams(state: &PerChannelState, spec: &QuarkConfig) -> Result<QParams> {
        let observed = !state.min.is_empty();
        let sz = if observed {
            qparams::calculate_qparams(spec, &state.min, &state.max, false)?
        } else {
            qparams::calculate_qparams(spec, &[f32::INFINITY], &[f32::NEG_INFINITY], true)?
        };
        let mut q = build_qparams(spec, sz, state.min.clone(), state.max.clone(), || {
            qparams::step(spec, "the running min/max of each channel")
        });
        q.axis = if observed { state.axis } else { None };
        q.notes.extend(state.notes.iter().cloned());
        Ok(q)
    }

    /// Hand-written: no kernel fits some qparams (see [`super::qdq_kernel`]).
    /// Per channel; the default qparams of an observer without data (no axis) are one scale
    /// for everything.
    fn fake_quantize(spec: &QuarkConfig, x: &Tensor, q: &QParams) -> Result<Tensor> {
        match q.axis {
            Some(_) => scaled_fake_quantize(spec, x, &q.scale, &q.zero_point),
            None => scaled_fake_quantize(&spec.per_tensor(), x, &q.scale, &q.zero_point),
        }
    }

    fn qdq_kernel(spec: &QuarkConfig, shape: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>> {
        match q.axis {
            Some(_) => super::qdq_kernel::per_channel_kernel(spec, shape, q),
            None => super::qdq_kernel::kernel(&spec.per_tensor(), q),
        }
    }

    fn plot(state: &PerChannelState) -> PlotSnapshot {
        PlotSnapshot {
            min_val: state.min.clone(),
            max_val: state.max.clone(),
            histogram: None,
        }
    }
}

/// What `PerGroupMinMaxObserver` keeps of the last batch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerGroupState {
    pub min: Vec<f32>,
    pub max: Vec<f32>,
    /// `(axis, group size)` of the last batch.
    pub layout: Option<(usize, usize)>,
}

/// `PerGroupMinMaxObserver`.
pub struct PerGroupMinMax;

impl ObserverKind for PerGroupMinMax {
    type Args = PerGroupMinMaxArgs;
    type Config = QuarkConfig;
    type State = PerGroupState;

    fn resolve(args: &PerGroupMinMaxArgs, _: &[String]) -> Result<QuarkConfig> {
        args.quark_config()
    }

    fn init(_: &QuarkConfig) -> PerGroupState {
        PerGroupState::default()
    }

    fn feed(state: &mut PerGroupState, spec: &QuarkConfig, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let shape = shape_of(batch);
        let axis = spec.axis_for(shape.len())?;
        let len = shape[axis];
        let group_size = spec.group_size.unwrap_or(-1);
        if group_size > 0 && !len.is_multiple_of(group_size as usize) {
            return Err(Error::framework(
                "ValueError",
                format!(
                    "The number of element per dimension ch_axis={} is {len} which is not divisible by group_size={group_size}. The `group_size` used should be updated in the QTensorConfig.",
                    spec.ch_axis.unwrap_or(0)
                ),
                Stage::Forward,
            ));
        }
        if group_size == -1 && shape.len() < 2 {
            return Err(Error::framework(
                "IndexError",
                "Dimension out of range (expected to be in range of [-1, 0], but got 1)",
                Stage::Forward,
            ));
        }
        let layout = group_layout(spec, &shape)?;
        let init = (f32::INFINITY, f32::NEG_INFINITY);
        (state.min, state.max) = layout
            .fold(&batch.data, init, |(lo, hi), v| {
                (nan_min(lo, v), nan_max(hi, v))
            })
            .into_iter()
            .unzip();
        state.layout = Some((axis, layout.block_size()));
        Ok(())
    }

    fn qparams(state: &PerGroupState, spec: &QuarkConfig) -> Result<QParams> {
        let Some((axis, block)) = state.layout else {
            let sz = qparams::int_qparams(spec, &[f32::INFINITY], &[f32::NEG_INFINITY], true)?;
            return Ok(build_qparams(spec, sz, Vec::new(), Vec::new(), || {
                qparams::step(spec, "no data observed: Quark's defaults s = 1, zp = 0")
            }));
        };
        let sz = if spec.dtype.is_fp8() {
            qparams::fp8_qparams(spec, &state.min, &state.max, qparams::EPS)
        } else {
            qparams::int_qparams(spec, &state.min, &state.max, false)?
        };
        let mut q = build_qparams(spec, sz, state.min.clone(), state.max.clone(), || {
            qparams::step(spec, "the min/max of each group of the last batch")
        });
        q.extra.insert("block_axis".into(), axis.into());
        q.extra.insert("block_size".into(), block.into());
        Ok(q)
    }

    /// Hand-written: no kernel fits some qparams (see [`super::qdq_kernel`]).
    /// Per group; the default qparams of an observer without data (no min/max) are one scale
    /// for everything.
    fn fake_quantize(spec: &QuarkConfig, x: &Tensor, q: &QParams) -> Result<Tensor> {
        if q.min_val.is_empty() {
            return scaled_fake_quantize(&spec.per_tensor(), x, &q.scale, &q.zero_point);
        }
        scaled_fake_quantize(spec, x, &q.scale, &q.zero_point)
    }

    fn qdq_kernel(spec: &QuarkConfig, shape: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>> {
        if q.min_val.is_empty() {
            return super::qdq_kernel::kernel(&spec.per_tensor(), q);
        }
        super::qdq_kernel::per_group_kernel(spec, shape, q)
    }

    /// The blocks of the group layout, when `forward` accepts the shape (a row length that the
    /// group size divides).
    fn slice_count(spec: &QuarkConfig, shape: &[usize]) -> Option<usize> {
        let layout = group_layout(spec, shape).ok()?;
        let len = shape.get(layout.axis()).copied()?;
        (len % layout.block_size() == 0).then(|| layout.num_blocks())
    }

    fn plot(state: &PerGroupState) -> PlotSnapshot {
        PlotSnapshot {
            min_val: state.min.clone(),
            max_val: state.max.clone(),
            histogram: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::observer::{Instance, ZeroPoint};
    use crate::params::Params;
    use crate::registry;
    use crate::tensor::Tensor;
    use serde_json::{json, Value};

    fn t(shape: &[usize], data: &[f32]) -> Tensor {
        Tensor::new(shape.to_vec(), data.to_vec()).unwrap()
    }

    fn instance(id: &str, p: Value) -> Instance {
        Instance::new(registry::find(id).unwrap(), &Params::from_value(p).unwrap()).unwrap()
    }

    #[test]
    fn per_tensor_running_and_dynamic() {
        let id = "quark.PerTensorMinMaxObserver";
        let mut o = instance(id, json!({}));
        let q = o.qparams().unwrap();
        assert_eq!((q.scale.clone(), q.min_val.len()), (vec![1.0], 0));
        o.feed(&t(&[2], &[-1.0, 2.0])).unwrap();
        o.feed(&t(&[2], &[0.5, 0.25])).unwrap();
        assert_eq!(o.qparams().unwrap().max_val, vec![2.0]);
        let mut dynamic = instance(id, json!({"is_dynamic": true}));
        dynamic.feed(&t(&[2], &[-1.0, 2.0])).unwrap();
        dynamic.feed(&t(&[2], &[0.5, 0.25])).unwrap();
        let q = dynamic.qparams().unwrap();
        assert_eq!((q.min_val, q.max_val), (vec![0.25], vec![0.5]));
    }

    #[test]
    fn per_channel_restarts_when_the_channel_count_changes() {
        let id = "quark.PerChannelMinMaxObserver";
        let mut o = instance(id, json!({"dtype": "uint8"}));
        o.feed(&t(&[2, 2], &[1.0, 2.0, -3.0, 4.0])).unwrap();
        o.feed(&t(&[2, 1], &[5.0, -6.0])).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(
            (q.min_val.clone(), q.max_val.clone()),
            (vec![1.0, -6.0], vec![5.0, 4.0])
        );
        assert_eq!(q.axis, Some(0));
        o.feed(&t(&[3], &[1.0, 2.0, 3.0])).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.min_val, vec![1.0, 2.0, 3.0]);
        assert!(q.notes.iter().any(|n| n.contains("restarted")));
        // Negative axes count from the end.
        let mut last = instance(id, json!({"ch_axis": -1}));
        last.feed(&t(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
            .unwrap();
        assert_eq!(last.qparams().unwrap().max_val, vec![4.0, 5.0, 6.0]);
        assert!(
            last.feed(&t(&[2], &[1.0, 2.0])).is_ok(),
            "-1 is valid on 1-d"
        );
        let mut bad = instance(id, json!({"ch_axis": 2}));
        let err = bad.feed(&t(&[2, 2], &[0.0; 4])).unwrap_err().to_string();
        assert!(err.starts_with("IndexError"), "{err}");
    }

    #[test]
    fn per_group_overwrites_and_checks_divisibility() {
        let mut o = instance("quark.PerGroupMinMaxObserver", json!({"group_size": 2}));
        o.feed(&t(&[2, 4], &[1.0, -2.0, 3.0, 4.0, 5.0, 6.0, -7.0, 8.0]))
            .unwrap();
        o.feed(&t(&[2, 4], &[0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 2.55]))
            .unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.max_val, vec![1.0, 1.0, 1.0, 2.55]);
        assert_eq!(q.scale[3], 2.55f32 / 127.5);
        assert_eq!(q.zero_point, ZeroPoint::Int(vec![0; 4]));
        assert_eq!(q.extra["block_size"], 2);
        let y = o
            .fake_quantize(&t(&[2, 4], &[0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 3.0]), &q)
            .unwrap();
        assert_eq!(y.data[7], 127.0 * (2.55f32 / 127.5));
        let err = o.feed(&t(&[1, 3], &[0.0; 3])).unwrap_err().to_string();
        assert!(err.contains("not divisible by group_size=2"), "{err}");
    }

    #[test]
    fn observers_without_data_quantize_per_tensor_with_the_defaults() {
        for id in [
            "quark.PerChannelMinMaxObserver",
            "quark.PerGroupMinMaxObserver",
        ] {
            let o = instance(id, json!({"dtype": "int8", "symmetric": true}));
            let q = o.qparams().unwrap();
            assert_eq!(q.scale, vec![1.0], "{id}");
            let y = o
                .fake_quantize(&t(&[2, 2], &[0.4, 1.6, -3.0, 200.0]), &q)
                .unwrap();
            assert_eq!(y.data, vec![0.0, 2.0, -3.0, 127.0], "{id}");
        }
    }
}
