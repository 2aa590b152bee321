//! RoadRunner log reader (stub: filled in by the formats work).

use std::io::BufRead;

use super::{Event, EventSource, Names};
use crate::error::{Error, Position, Result};

/// True if a first line looks like this format.
pub fn looks_like(_line: &[u8]) -> bool {
    false
}

pub struct RrReader<R> {
    _rdr: R,
    names: Names,
}

impl<R: BufRead> RrReader<R> {
    pub fn from_buf_read(rdr: R) -> Self {
        RrReader {
            _rdr: rdr,
            names: Names::new(),
        }
    }
}

impl<R: BufRead> EventSource for RrReader<R> {
    fn next_event(&mut self) -> Result<Option<Event>> {
        Err(Error::invalid("RoadRunner log reader not implemented yet"))
    }
    fn names(&self) -> &Names {
        &self.names
    }
    fn position(&self) -> Position {
        Position::default()
    }
}
