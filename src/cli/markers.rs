//! The arguments of marker files: `mark`, `begin`, `end`, and the caps on reading them.

use super::values::parse_limit;
use clap::{Args, ValueEnum};
use tc_profile_format::marker_file::{Category, Limits};

#[derive(Args, Debug)]
pub struct MarkArgs {
    /// The marker's name.
    pub name: String,
    #[command(flatten)]
    pub details: MarkerDetails,
}

#[derive(Args, Debug)]
pub struct BeginArgs {
    /// The interval's name.
    pub name: String,
    /// Match the end by this id, from any process, instead of by name in this shell.
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    #[command(flatten)]
    pub details: MarkerDetails,
}

/// What `mark` and `begin` show with their marker.
#[derive(Args, Debug)]
pub struct MarkerDetails {
    /// A description shown with the marker.
    #[arg(long, value_name = "TEXT")]
    pub text: Option<String>,
    #[arg(long, value_name = "CATEGORY", default_value = "user")]
    pub category: CategoryArg,
}

#[derive(Args, Debug)]
pub struct EndArgs {
    /// The name given to begin.
    pub name: String,
    /// The id given to begin, if any.
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// A description that replaces begin's.
    #[arg(long, value_name = "TEXT")]
    pub text: Option<String>,
}

/// worker: the worker's lifecycle steps; task: the task's phases; user: anything else.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CategoryArg {
    Worker,
    Task,
    User,
}

impl From<CategoryArg> for Category {
    fn from(category: CategoryArg) -> Category {
        match category {
            CategoryArg::Worker => Category::Worker,
            CategoryArg::Task => Category::Task,
            CategoryArg::User => Category::User,
        }
    }
}

#[derive(Args, Debug)]
pub struct LimitArgs {
    /// A cap on reading marker files, repeatable: line-bytes, file-bytes, files, depth,
    /// open-intervals, schemas, time-slack (seconds); defaults in SPEC.md.
    #[arg(long = "limit", value_name = "NAME=VALUE", value_parser = parse_limit)]
    pub limits: Vec<String>,
}

impl LimitArgs {
    pub fn limits(&self) -> Limits {
        let mut limits = Limits::default();
        for assignment in &self.limits {
            // Each one passed parse_limit already.
            let _ = limits.set(assignment);
        }
        limits
    }
}
