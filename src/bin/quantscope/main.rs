//! `quantscope`: run quantization observers on tensor files from a terminal or a CI job.
//!
//! ```text
//! quantscope list [--json]
//! quantscope inspect PATH... [--json]
//! quantscope dequantize PATH... [--tensor NAME]... --out DIR|FILE.safetensors [--dtype f32|f16|bf16]
//! quantscope diff ORIGINAL QUANTIZED [--imatrix FILE] [--json | --csv] [--svg OUT.svg] [--shard I/N --json]
//! quantscope observe FILE... [--observer ID | --preset NAME] [--params JSON] [--set JSON] [--split-axis N] [--strict] [--explain] [--rotate hadamard[:SEED]] [--json]
//! quantscope adaround W X [--bits 4|8] [--scheme per_channel_symmetric|…] [--iters N] [--json]
//! quantscope formats FILE [--rotate hadamard[:SEED]] [--json]
//! quantscope quantize FILE --quantizer ID [--params JSON] [--out OUT.npy] [--json]
//! quantscope model PATH... [--observers ID,...] [--formats ID[:JSON],...] [--json | --csv] [--jobs N] [--svg OUT.svg] [--shard I/N --json]
//! quantscope merge PORTION.json... [--json | --csv] [--svg OUT.svg]
//! ```
//! Each FILE of `observe` is one calibration batch, in order; `file.npz:member`,
//! `file.safetensors:tensor` and `file.pt:dotted.name` pick one tensor of a container.

mod checkpoint_cmd;
mod merge_cmd;
mod model_cmd;
mod output;

use clap::{Parser, Subcommand};
use output::Shown;
use quantscope::codec;
use quantscope::commands::{self, inputs};
use quantscope::engine::{NonFinitePolicy, Report};
use quantscope::params::Params;
use quantscope::portion::Portion;
use quantscope::quantizers::adaround::{self, AdaRoundConfig, WeightScheme};
use quantscope::quantizers::apply as quantize;
use quantscope::tensor::Tensor;
use quantscope::Result;
use std::process::ExitCode;

/// Lets `.npy`/`.safetensors` float32 data be used straight from a memory map
/// (see [`quantscope::tensor::mapped`]). With the `python` feature the library declares this
/// same allocator for its Python module, and the CLI uses that one.
#[cfg(not(feature = "python"))]
#[global_allocator]
static ALLOCATOR: quantscope::tensor::mapped::MapAwareAllocator =
    quantscope::tensor::mapped::MapAwareAllocator;

/// Quantization observers of PyTorch, AMD Quark, Horizon, ONNX Runtime and NVIDIA ModelOpt,
/// reproduced exactly.
#[derive(Parser, Debug)]
#[command(name = "quantscope", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List every observer and preset with its parameters.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// List the tensors of a file with shape, dtype and NaN/Inf counts.
    Inspect {
        /// Checkpoint files or folders: .safetensors (quantized layouts recognised from the
        /// folder's config.json), GGUF, ONNX, PyTorch (.pt, .pth, .bin; read without running
        /// their pickles), .npz, .npy.
        #[arg(required = true)]
        paths: Vec<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Decode every stored weight (or the named ones) to float: one .npy per weight in a
    /// folder, or one .safetensors file.
    Dequantize {
        /// Checkpoint files or folders.
        #[arg(required = true)]
        paths: Vec<String>,
        /// A weight to decode (repeat for several); all when absent.
        #[arg(long = "tensor")]
        tensors: Vec<String>,
        /// A folder (one float32 .npy per weight) or a FILE.safetensors.
        #[arg(long)]
        out: std::path::PathBuf,
        /// The dtype of a .safetensors output.
        #[arg(long, value_enum, default_value = "f32")]
        dtype: checkpoint_cmd::OutDtype,
    },
    /// Compare a quantized checkpoint with its original, weight by weight.
    Diff {
        /// The original checkpoint (file or folder).
        original: String,
        /// The quantized checkpoint (file or folder).
        quantized: String,
        /// A llama.cpp importance matrix (imatrix.gguf or legacy .dat) for the weighted error.
        #[arg(long)]
        imatrix: Option<std::path::PathBuf>,
        /// Print JSON.
        #[arg(long, conflicts_with = "csv")]
        json: bool,
        /// Print CSV.
        #[arg(long)]
        csv: bool,
        /// Also write the layer profile (SQNR per weight, quantized and round-to-nearest).
        #[arg(long, value_name = "OUT.svg", conflicts_with = "shard")]
        svg: Option<std::path::PathBuf>,
        /// Compare only portion I of N of the pairs (from 0) and print its document for
        /// `quantscope merge` (with --json).
        #[arg(long, value_name = "I/N", requires = "json")]
        shard: Option<String>,
    },
    /// Run observers over calibration batches and report their qparams and error.
    Observe {
        /// Calibration batches in order (`file.npz:member` picks one tensor of a container).
        /// With none, the observer is only built (constructor errors show) and reports what
        /// it returns before seeing data.
        files: Vec<String>,
        /// Observer id, e.g. `torch.HistogramObserver` (default: every per-tensor observer);
        /// several ids, comma-separated or with the flag repeated, run side by side.
        #[arg(long, conflicts_with = "preset", value_delimiter = ',')]
        observer: Vec<String>,
        /// Named preset, e.g. `default_weight_observer`.
        #[arg(long)]
        preset: Option<String>,
        /// Parameters as a JSON object, e.g. '{"dtype": "qint8", "bins": 256}'; a vector
        /// parameter may name a tensor file ('{"importance": "imatrix.npy"}').
        #[arg(long, default_value = "{}")]
        params: String,
        /// Attributes assigned after construction as a JSON object, e.g. '{"upsample_rate": 128}'
        /// (PyTorch code can set `obs.upsample_rate` on a HistogramObserver).
        #[arg(long, default_value = "{}")]
        set: String,
        /// Split the (single) tensor into batches along this axis.
        #[arg(long)]
        split_axis: Option<usize>,
        /// Refuse tensors containing NaN or ±Inf instead of excluding those values.
        #[arg(long)]
        strict: bool,
        /// Explain the choice: the steps and numbers by which each observer reached its range
        /// and scale (with --json, a `derivation` list in each report).
        #[arg(long)]
        explain: bool,
        /// Also run on the batches rotated along their last axis by a randomized Hadamard
        /// rotation (`hadamard` or `hadamard:SEED`), and show before and after.
        #[arg(long, value_name = "hadamard[:SEED]")]
        rotate: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Compare every number format on one tensor: int8/4, fp16, bf16, fp8/6/4, MX, BFP.
    Formats {
        /// A tensor (`file.npz:member` picks one tensor of a container).
        file: String,
        /// Also compare on the tensor rotated along its last axis by a randomized Hadamard
        /// rotation (`hadamard` or `hadamard:SEED`), and show before and after.
        #[arg(long, value_name = "hadamard[:SEED]")]
        rotate: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Quantize one tensor with any registered quantizer or format (int, mx, bnb.nf4,
    /// ggml.Q4_K, quark.INTQuantizer, …) and write the dequantized tensor.
    Quantize {
        /// A tensor (`file.npz:member` picks one tensor of a container).
        file: String,
        /// Quantizer id, e.g. `ggml.Q4_K`, `bnb.nf4`, `mx`, `quark.INTQuantizer` (see `list`).
        #[arg(long)]
        quantizer: String,
        /// Parameters as a JSON object with the library's own keys, e.g.
        /// '{"quant_type": "nf4", "blocksize": 64, "compress_statistics": true}';
        /// `"imatrix": "FILE.npy"` loads the importance vector from a file.
        #[arg(long, default_value = "{}")]
        params: String,
        /// Write the dequantized tensor here (float32 .npy, the input's shape).
        #[arg(long)]
        out: Option<String>,
        /// Show how one block was stored, step by step, with the quantizer's own search tables
        /// (ggml's types and MX); with --json, as `derivation`.
        #[arg(long)]
        explain: bool,
        /// The block --explain follows (default: the one holding the largest magnitude).
        #[arg(long, requires = "explain")]
        block: Option<usize>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Rank every tensor of a checkpoint by what quantization does to it, worst first.
    ///
    /// Default methods: torch.MinMaxObserver (8-bit per tensor), torch.PerChannelMinMaxObserver
    /// (tensors with two or more axes), torch.HistogramObserver, fp8_e4m3, mxfp4_e2m1 and
    /// int4 per group of 32. Naming --observers or --formats replaces them.
    Model {
        /// .safetensors files or shards, a *.safetensors.index.json, .npz, .npy, .gguf, .onnx
        /// and PyTorch (.pt, .pth, .bin) files, or folders of them.
        #[arg(required = true)]
        paths: Vec<String>,
        /// Observer ids, comma-separated (each with its default parameters).
        #[arg(long)]
        observers: Option<String>,
        /// Formats, comma-separated: each a quantizer id with its parameters as `quantize`
        /// takes them, `ID` or `ID:JSON` (e.g. `ggml.Q4_K,minifloat:{"element": "fp8_e4m3"},
        /// int:{"bits": 4, "granularity": "per_group", "group_size": 32}`); results are named
        /// by the format's label, as `quantscope formats` prints it.
        #[arg(long)]
        formats: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long, conflicts_with = "csv")]
        json: bool,
        /// Print CSV instead of a table.
        #[arg(long)]
        csv: bool,
        /// Tensors ranked at once (default: the number of cores); at most this many tensors
        /// are decoded in memory at a time.
        #[arg(long)]
        jobs: Option<usize>,
        /// Also write the layer profile (SQNR per tensor in checkpoint order, by layer) as SVG.
        #[arg(long, value_name = "OUT.svg", conflicts_with = "shard")]
        svg: Option<std::path::PathBuf>,
        /// Rank only portion I of N of the tensors (from 0) and print its document for
        /// `quantscope merge` (with --json).
        #[arg(long, value_name = "I/N", requires = "json")]
        shard: Option<String>,
    },
    /// Put the documents of every portion of a `model` or `diff` together (written with
    /// --shard I/N --json, in any order): the document the command prints when it runs whole.
    Merge {
        /// The portions' JSON documents, one per portion.
        #[arg(required = true, value_name = "PORTION.json")]
        documents: Vec<std::path::PathBuf>,
        /// Print JSON (the default).
        #[arg(long, conflicts_with = "csv")]
        json: bool,
        /// Print CSV instead of JSON.
        #[arg(long)]
        csv: bool,
        /// Also write the layer profile as SVG.
        #[arg(long, value_name = "OUT.svg")]
        svg: Option<std::path::PathBuf>,
    },
    /// Learn a layer's weight rounding with AdaRound and compare it with round-to-nearest.
    Adaround {
        /// The weight `[out, in]` (`file.npz:member` picks one tensor of a container).
        weight: String,
        /// Calibration inputs of the layer `[n, in]`.
        inputs: String,
        /// Weight bit width.
        #[arg(long, default_value_t = 4)]
        bits: u32,
        /// per_channel_symmetric, per_tensor_symmetric, per_channel_affine or per_tensor_affine.
        #[arg(long, default_value = "per_channel_symmetric")]
        scheme: String,
        /// Adam iterations (Quark's default: 1000).
        #[arg(long, default_value_t = 1000)]
        iters: usize,
        /// Rows of the inputs per iteration.
        #[arg(long, default_value_t = 64)]
        batch_rows: usize,
        /// Seed of the mini-batch sampling.
        #[arg(long, default_value_t = 1_705_472_343)]
        seed: u64,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// A closed pipe (`quantscope list | head`) ends the process quietly, as it does other Unix
/// tools, instead of a panic in `println!` (Rust programs start with SIGPIPE ignored).
#[cfg(unix)]
fn end_quietly_on_a_closed_pipe() {
    // SAFETY: sets the default disposition of one signal, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    #[cfg(unix)]
    end_quietly_on_a_closed_pipe();
    quantscope::parallel::reuse_freed_memory();
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("quantscope: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::List { json } => {
            if json {
                output::print_json(&output::registry_json())
            } else {
                print!("{}", output::registry_table());
            }
            Ok(())
        }
        Command::Inspect { paths, json } => checkpoint_cmd::inspect(&paths, json),
        Command::Dequantize {
            paths,
            tensors,
            out,
            dtype,
        } => checkpoint_cmd::dequantize(&paths, &tensors, &out, dtype),
        Command::Diff {
            original,
            quantized,
            imatrix,
            json,
            csv,
            svg,
            shard,
        } => checkpoint_cmd::diff(
            &original,
            &quantized,
            imatrix.as_deref(),
            shard.as_deref().map(Portion::parse).transpose()?,
            if json {
                checkpoint_cmd::DiffFormat::Json
            } else if csv {
                checkpoint_cmd::DiffFormat::Csv
            } else {
                checkpoint_cmd::DiffFormat::Table
            },
            svg.as_deref(),
        ),
        Command::Observe {
            files,
            observer,
            preset,
            params,
            set,
            split_axis,
            strict,
            explain,
            rotate,
            json,
        } => {
            let user_params = Params::from_json(&params)?;
            let attributes = Params::from_json(&set)?;
            let batches = inputs::read_batches(&files, split_axis)?;
            let policy = if strict {
                NonFinitePolicy::Strict
            } else {
                NonFinitePolicy::Exclude
            };
            let runs = commands::observer_runs(&observer, preset.as_deref(), &user_params)?;
            let observe = |batches: &[Tensor]| -> Result<Vec<Report>> {
                let reports =
                    commands::observe(&runs, batches, Some(&attributes), policy, explain)?;
                if let [report] = reports.as_slice() {
                    if let Some(e) = &report.error {
                        return Err(quantscope::Error::input(e.message.clone()));
                    }
                }
                Ok(reports)
            };
            // Only the form printed is rendered: a per-group report's JSON holds a million
            // scales, which the table does not show.
            let shown = |reports: &[Report], batches: &[Tensor]| -> Shown {
                match reports {
                    [report] if json => Shown::Json(commands::report_json(report)),
                    [report] => Shown::Text(output::report_text(report)),
                    _ if json => Shown::Json(output::comparison_json(reports)),
                    _ => {
                        let mut text = output::comparison_table(reports, batches);
                        text.push_str(&output::diagnosis_text(reports, batches));
                        if explain {
                            text.push_str(&output::derivations_text(reports));
                        }
                        Shown::Text(text)
                    }
                }
            };
            let before = shown(&observe(&batches)?, &batches);
            match rotate {
                None => before.print(),
                Some(spec) => {
                    let (rotated, rotation) =
                        quantscope::rotation::rotate_batches(&batches, &spec)?;
                    match (before, shown(&observe(&rotated)?, &rotated)) {
                        (Shown::Json(before), Shown::Json(after)) => {
                            output::print_json(&serde_json::json!({
                                "rotation": rotation,
                                "before": before,
                                "after": after,
                            }))
                        }
                        (before, after) => print!(
                            "before rotation\n\n{}\nafter rotation: {rotation}\n\n{}",
                            before.text(),
                            after.text()
                        ),
                    }
                }
            }
            Ok(())
        }
        Command::Formats { file, rotate, json } => {
            let tensor = inputs::read_tensor(&file)?;
            let results = codec::compare(&tensor);
            match rotate {
                None if json => output::print_json(&commands::formats_json(&results)),
                None => print!("{}", output::formats_table(&file, &tensor, &results)),
                Some(spec) => {
                    let (rotated, rotation) =
                        quantscope::rotation::rotate_batches(std::slice::from_ref(&tensor), &spec)?;
                    let after = codec::compare(&rotated[0]);
                    if json {
                        output::print_json(&serde_json::json!({
                            "rotation": rotation,
                            "before": commands::formats_json(&results),
                            "after": commands::formats_json(&after),
                        }));
                    } else {
                        print!(
                            "before rotation\n\n{}\nafter rotation: {rotation}\n\n{}\n{}\n",
                            output::formats_table(&file, &tensor, &results),
                            output::formats_table(&file, &rotated[0], &after),
                            output::rotation_verdict(&results, &after)
                        );
                    }
                }
            }
            Ok(())
        }
        Command::Quantize {
            file,
            quantizer,
            params,
            out,
            explain,
            block,
            json,
        } => {
            let tensor = inputs::read_tensor(&file)?;
            let params = inputs::resolve_vector_files(Params::from_json(&params)?)?;
            let result = quantize::quantize(&quantizer, &params, &tensor)?;
            let derivation = explain
                .then(|| quantscope::codec::explain::explain(&quantizer, &params, &tensor, block))
                .transpose()?;
            if let Some(path) = &out {
                inputs::write_npy_f32(path, &result.shape, &result.values)?;
            }
            if json {
                output::print_json(&commands::quantize_json(
                    &result,
                    out.as_deref(),
                    derivation.as_ref(),
                ));
            } else {
                print!("{}", output::quantize_text(&file, &result, out.as_deref()));
                if let Some(d) = &derivation {
                    print!(
                        "\nHow block {} of {} was stored:\n{}",
                        d.block,
                        d.blocks,
                        quantscope::derivation::to_text(&d.steps)
                    );
                }
            }
            Ok(())
        }
        Command::Model {
            paths,
            observers,
            formats,
            json,
            csv,
            jobs,
            svg,
            shard,
        } => {
            let methods = model_cmd::methods_from(observers.as_deref(), formats.as_deref())?;
            let portion = shard.as_deref().map(Portion::parse).transpose()?;
            let format = match (json, csv) {
                (true, _) => model_cmd::Format::Json,
                (_, true) => model_cmd::Format::Csv,
                _ => model_cmd::Format::Table,
            };
            model_cmd::run(&paths, &methods, jobs, portion, format, svg.as_deref())
        }
        Command::Merge {
            documents,
            json: _,
            csv,
            svg,
        } => merge_cmd::run(&documents, csv, svg.as_deref()),
        Command::Adaround {
            weight,
            inputs: x,
            bits,
            scheme,
            iters,
            batch_rows,
            seed,
            json,
        } => {
            let config = AdaRoundConfig {
                bits,
                scheme: WeightScheme::parse(&scheme)?,
                iterations: iters,
                batch_rows,
                seed,
                ..AdaRoundConfig::default()
            };
            let w = inputs::read_tensor(&weight)?;
            let x = inputs::read_tensor(&x)?;
            let outcome = adaround::optimise(&w, &x, &config, &mut |_| true)?;
            if json {
                output::print_json(&serde_json::to_value(&outcome).unwrap_or_default());
            } else {
                print!("{}", output::adaround_text(&outcome));
            }
            Ok(())
        }
    }
}
