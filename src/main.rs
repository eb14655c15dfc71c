//! The `baton` command line: parses arguments, calls one library stage, maps the outcome to an
//! exit code. Everything else lives in the library.

mod cli;

fn main() {
    std::process::exit(cli::main(None));
}
