//! The `reqlife` binary: everything happens in the library's `app::main_with`, which returns
//! the exit code.

fn main() {
    std::process::exit(reqlife::app::main_with(std::env::args_os().collect()));
}
