//! How the min–max codecs share a scale: per tensor, per channel or per group of consecutive
//! elements along an axis. One place cuts a tensor into its slices, finds each slice's range,
//! and builds the fused quantize–dequantize kernel over them.

use crate::error::Result;
use crate::formats::blocks::BlockLayout;
use crate::qdq::{PerBlock, PerChannel, PerTensor, QdqKernel, Slicing};
use crate::quant::ChannelIndexer;
use crate::tensor::Tensor;
use serde::Serialize;

/// How scales are shared by an integer or small-float codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "granularity", rename_all = "snake_case")]
pub enum Sharing {
    /// One scale for the whole tensor.
    PerTensor,
    /// One scale per index of `axis`.
    PerChannel { axis: usize },
    /// One scale per `size` consecutive elements along `axis`.
    PerGroup { axis: usize, size: usize },
}

impl Sharing {
    /// The slices of a tensor of `shape` (an error when the axis is not one of its axes).
    pub fn slicing(self, shape: &[usize]) -> Result<Slicing> {
        Ok(match self {
            Sharing::PerTensor => Slicing::Tensor,
            Sharing::PerChannel { axis } if axis >= shape.len() => {
                return Err(crate::error::Error::param(
                    "axis",
                    format!("axis {axis} is out of range for shape {shape:?}"),
                ))
            }
            Sharing::PerChannel { axis } => Slicing::Channel(ChannelIndexer::new(shape, axis)),
            Sharing::PerGroup { axis, size } => {
                Slicing::Block(BlockLayout::new(shape, axis as i64, size)?)
            }
        })
    }

    /// Number of slices of a tensor of `shape`.
    pub fn count(self, shape: &[usize]) -> usize {
        match self {
            Sharing::PerTensor => 1,
            Sharing::PerChannel { axis } => shape.get(axis).copied().unwrap_or(1),
            Sharing::PerGroup { axis, size } => {
                BlockLayout::new(shape, axis as i64, size).map_or(1, |l| l.num_blocks())
            }
        }
    }

    /// `(min, max)` of each slice of `t`, NaN ignored (`(+∞, −∞)` for a slice without a
    /// number). Where slices are consecutive runs (per tensor, per channel of axis 0, per group
    /// along the last axis) each run is scanned in lanes ([`crate::lanes::min_max`]); other
    /// layouts look up each element's slice.
    pub fn ranges(self, t: &Tensor) -> Result<Vec<(f32, f32)>> {
        let slicing = self.slicing(&t.shape)?;
        let count = self.count(&t.shape);
        let data = &t.data;
        match self {
            Sharing::PerTensor => return Ok(vec![crate::lanes::min_max(data)]),
            Sharing::PerChannel { axis: 0 } if !t.shape.is_empty() => {
                let inner = t.shape[1..].iter().product::<usize>();
                if inner > 0 {
                    return Ok(crate::parallel::map_chunks_of(
                        data,
                        inner,
                        crate::lanes::min_max,
                    ));
                }
            }
            Sharing::PerGroup { axis, size } if axis + 1 == t.shape.len() && size > 0 => {
                let len = t.shape[axis];
                if len > 0 {
                    let per_row = crate::parallel::map_chunks_of(data, len, |row| {
                        row.chunks(size)
                            .map(crate::lanes::min_max)
                            .collect::<Vec<_>>()
                    });
                    let out: Vec<_> = per_row.into_iter().flatten().collect();
                    if out.len() == count {
                        return Ok(out);
                    }
                }
            }
            _ => {}
        }
        let mut out = vec![(f32::INFINITY, f32::NEG_INFINITY); count];
        for (i, &v) in data.iter().enumerate() {
            if let Some(r) = out.get_mut(slicing.slice_of(i)) {
                r.0 = r.0.min(v);
                r.1 = r.1.max(v);
            }
        }
        Ok(out)
    }

    /// `f(x, params[slice of x])` for every element of `t`, in C order.
    pub fn map<P>(
        self,
        t: &Tensor,
        params: &[P],
        mut f: impl FnMut(f32, &P) -> f32,
    ) -> Result<Vec<f32>> {
        let slicing = self.slicing(&t.shape)?;
        Ok(t.data
            .iter()
            .enumerate()
            .map(|(i, &x)| f(x, &params[slicing.slice_of(i)]))
            .collect())
    }

    /// The kernel quantize–dequantizing a tensor of `shape` element by element with
    /// `map(x, &params[k])` (`k`: the element's slice), clipping measured against `ranges[k]`.
    pub fn kernel<P, F>(
        self,
        shape: &[usize],
        params: Vec<P>,
        ranges: Vec<Option<(f64, f64)>>,
        map: F,
    ) -> Result<Box<dyn QdqKernel>>
    where
        P: Copy + Send + Sync + 'static,
        F: Fn(f32, &P) -> f32 + Send + Sync + 'static,
    {
        Ok(match self {
            Sharing::PerTensor => {
                let p = params[0];
                Box::new(PerTensor::with_range(ranges[0], move |x| map(x, &p)))
            }
            Sharing::PerChannel { axis } => Box::new(
                PerChannel::with_ranges(ranges, shape, axis, params, map)
                    .ok_or_else(|| crate::error::Error::input("one scale per channel"))?,
            ),
            Sharing::PerGroup { axis, size } => Box::new(
                PerBlock::with_ranges(
                    ranges,
                    BlockLayout::new(shape, axis as i64, size)?,
                    params,
                    map,
                )
                .ok_or_else(|| crate::error::Error::input("one scale per group"))?,
            ),
        })
    }
}

/// `[−max·s, max·s]` for each scale `s`: the range of a format whose elements reach `±max`.
pub fn symmetric_ranges(max: f32, scales: &[f32]) -> Vec<Option<(f64, f64)>> {
    let max = max as f64;
    scales
        .iter()
        .map(|&s| Some((-max * s as f64, max * s as f64)))
        .collect()
}
