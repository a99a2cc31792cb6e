//! The user's mistakes, kept apart from our failures: a [`UserError`] exits
//! with status 2 and one line; anything else exits 1.

use std::fmt;

#[derive(Debug)]
pub struct UserError(pub String);

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UserError {}

/// Returns early with a [`UserError`].
#[macro_export]
macro_rules! user_bail {
    ($($t:tt)*) => { return Err(anyhow::Error::new($crate::error::UserError(format!($($t)*)))) };
}

pub fn user(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UserError(msg.into()))
}

/// Maps library errors that are the user's doing (bad profile, missing root)
/// to [`UserError`].
pub fn from_net(e: aerolink_net::NetError) -> anyhow::Error {
    use aerolink_net::NetError::*;
    match e {
        Precondition(m) | Spec(m) => user(m),
        other => anyhow::Error::new(other),
    }
}
