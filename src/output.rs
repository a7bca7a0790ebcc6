//! The one place that writes what commands print: styles are stripped where colour is not
//! wanted (not a terminal, NO_COLOR, TERM=dumb), and a closed pipe is not an error.

use std::io::{self, Write};

pub fn to_stdout(bytes: &[u8]) -> io::Result<()> {
    ignore_closed_pipe(write_all(&mut anstream::stdout(), bytes))
}

pub fn to_stderr(bytes: &[u8]) -> io::Result<()> {
    ignore_closed_pipe(write_all(&mut anstream::stderr(), bytes))
}

fn write_all(stream: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    stream.write_all(bytes)?;
    stream.flush()
}

fn ignore_closed_pipe(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        result => result,
    }
}
