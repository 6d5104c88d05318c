//! The static checks, one test binary: the help texts, the README against the tool, the shape
//! of the source and its module layers. None needs a server or a network; sharing one binary
//! saves linking the crate four times. Each module is the test file it was
//! (`cargo test --test checks layers::` runs the layers' tests alone).

#[path = "../common/mod.rs"]
mod common;

mod help;
mod layers;
mod readme;
mod shape;
