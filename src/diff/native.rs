//! A diff of checkpoints on disk: each side a [`Checkpoint`] (files or folders) read one
//! memory-mapped weight at a time.

use super::names::GgufModel;
use super::{lint, LintItem, Reader};
use crate::checkpoint::layouts::Layout;
use crate::checkpoint::native::Checkpoint;
use crate::checkpoint::weights::{PartFrom, Weight, WeightSource};
use crate::checkpoint::{CheckpointKind, EntryDType, Storage};
use crate::error::Result;
use crate::params::Params;
use crate::tensor::Tensor;
use std::path::PathBuf;

/// One side of a diff on disk.
pub struct Side {
    pub checkpoint: Checkpoint,
    pub layout: Layout,
    pub gguf: Option<GgufModel>,
}

impl Side {
    /// Open `paths` (files or folders) as one checkpoint.
    pub fn open(paths: &[PathBuf]) -> Side {
        let checkpoint = Checkpoint::open(paths);
        let layout = checkpoint.layout();
        let gguf = checkpoint
            .catalog
            .files
            .iter()
            .find(|f| f.kind == Some(CheckpointKind::Gguf))
            .and_then(|f| {
                let bytes = std::fs::File::open(&f.name).ok().and_then(|file| {
                    // SAFETY: read-only map of a file being read; see checkpoint::native.
                    unsafe { memmap2::Mmap::map(&file) }.ok()
                })?;
                let kv = crate::checkpoint::gguf::metadata(&bytes).ok()?;
                GgufModel::from_metadata(&kv)
            });
        Side {
            checkpoint,
            layout,
            gguf,
        }
    }
}

impl Reader for Side {
    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn read(&self, weight: &Weight) -> Result<Tensor> {
        self.checkpoint.read_weight(weight)
    }

    fn gguf(&self) -> Option<&GgufModel> {
        self.gguf.as_ref()
    }

    fn files(&self) -> Vec<String> {
        self.checkpoint
            .catalog
            .files
            .iter()
            .map(|f| f.name.clone())
            .collect()
    }

    fn codec(&self, weight: &Weight) -> Option<(String, Params)> {
        match &weight.source {
            WeightSource::Coded { codec, params, .. } => Some((codec.clone(), params.clone())),
            WeightSource::Entry(i) => match &self.checkpoint.catalog.entries.get(*i)?.storage {
                Storage::Coded { codec, .. } => Some((codec.clone(), Params::new())),
                _ => None,
            },
        }
    }

    fn lint_scales(&self, weight: &Weight) -> Vec<LintItem> {
        let WeightSource::Coded { codec, parts, .. } = &weight.source else {
            return Vec::new();
        };
        let catalog = &self.checkpoint.catalog;
        let mut out = Vec::new();
        for p in parts {
            let is_scale =
                (p.part.contains("scale") || p.part.contains("absmax")) && !p.part.contains("zero");
            let PartFrom::Entry(i) = p.from else {
                continue;
            };
            let Some(entry) = catalog.entries.get(i).filter(|_| is_scale) else {
                continue;
            };
            let EntryDType::Known(dtype) = entry.dtype else {
                continue;
            };
            if let Ok(values) = self.checkpoint.read(entry) {
                out.extend(lint::of_scales(
                    &weight.name,
                    p.part,
                    codec,
                    dtype,
                    &values.data,
                ));
            }
        }
        out
    }
}

/// Compare the checkpoint at `quantized` with the one at `original`, with importance from the
/// imatrix file `imatrix` if given.
pub fn diff_paths(
    original: &[PathBuf],
    quantized: &[PathBuf],
    imatrix: Option<&std::path::Path>,
) -> Result<super::DiffReport> {
    let importance = match imatrix {
        Some(path) => {
            let bytes = std::fs::read(path).map_err(|e| {
                crate::error::Error::load(path.to_string_lossy(), format!("cannot read: {e}"))
            })?;
            Some(crate::checkpoint::imatrix::read(
                &path.to_string_lossy(),
                &bytes,
            )?)
        }
        None => None,
    };
    let (o, q) = (Side::open(original), Side::open(quantized));
    let mut report = super::diff(&o, &q, importance.as_ref());
    for side in [&o, &q] {
        for e in &side.checkpoint.catalog.load_errors {
            report.lint.push(LintItem {
                tensor: String::new(),
                kind: "unreadable",
                message: format!("{}: {}", e.file, e.error),
            });
        }
    }
    Ok(report)
}
