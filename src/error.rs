//! The one error type of the engine. Every bad input maps to a variant with a message a user can act on.

use serde::Serialize;

/// Where in an observer's life a framework raised an error, as the golden cases record it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Constructing the observer (parameter validation).
    Init,
    /// Feeding a batch (`forward`).
    Forward,
    /// Computing quantization parameters (`calculate_qparams`).
    CalculateQparams,
}

impl Stage {
    /// The stage's name as the golden cases spell it.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Init => "init",
            Stage::Forward => "forward",
            Stage::CalculateQparams => "calculate_qparams",
        }
    }
}

/// Everything that can go wrong in quantscope.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A tensor file could not be read: malformed, truncated, or of an unsupported kind.
    #[error("cannot read {what}: {reason}")]
    Load {
        /// The file or member being read.
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A parameter has the wrong type or lies outside its documented range.
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParam {
        /// Parameter name as in the registry.
        name: String,
        /// Why the value is refused.
        reason: String,
    },
    /// The reference framework itself refuses this configuration or input; `kind` and `message`
    /// reproduce the framework's exception (e.g. `AssertionError`).
    #[error("{kind}: {message}")]
    Framework {
        /// The framework's exception class.
        kind: String,
        /// The framework's message.
        message: String,
        /// When the framework raises it.
        stage: Stage,
    },
    /// An observer, preset or tensor name that does not exist.
    #[error("unknown {what} `{name}`{hint}")]
    Unknown {
        /// What kind of thing was looked up ("observer", "preset", "tensor").
        what: &'static str,
        /// The name asked for.
        name: String,
        /// A suggestion, already formatted (may be empty).
        hint: String,
    },
    /// The input cannot be observed as asked (empty tensor, non-finite values in strict mode,
    /// shape that does not fit the observer).
    #[error("{0}")]
    Input(String),
}

impl Error {
    /// Shorthand for a load error.
    pub fn load(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Load {
            what: what.into(),
            reason: reason.into(),
        }
    }

    /// Shorthand for an invalid-parameter error.
    pub fn param(name: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidParam {
            name: name.into(),
            reason: reason.into(),
        }
    }

    /// Shorthand for a framework exception raised at `stage`.
    pub fn framework(kind: &str, message: impl Into<String>, stage: Stage) -> Self {
        Error::Framework {
            kind: kind.to_string(),
            message: message.into(),
            stage,
        }
    }

    /// Shorthand for an input error.
    pub fn input(message: impl Into<String>) -> Self {
        Error::Input(message.into())
    }
}

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
