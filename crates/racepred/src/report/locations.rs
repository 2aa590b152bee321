//! Source locations a person can open: a *location table* maps the location names of a
//! trace (RAPID's integers) to `File.java:line:col` text, and [`EventLines`] gives the line
//! of the trace file an event came from. Both are report context, read once before printing;
//! nothing here runs per event of an analysis.
//!
//! A table is a text file of `id<TAB>text` lines (the Java corpus's `locs/NAME.locs`); blank
//! lines and lines starting with `#` are skipped, a trailing `\r` is dropped. Beside a trace
//! `DIR/NAME.std.xz` it is found automatically ([`sidecar_candidates`]) as
//! `DIR/NAME.std.xz.locs`, `DIR/NAME.locs` or `DIR/locs/NAME.locs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use crate::error::{Error, ErrorKind, Position, Result};
use crate::trace::{EventSource, LocId, Names};

/// A location table: location name → source text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocationTable {
    /// Where it was read from (for the report's "locations" line); `None` if built in memory.
    path: Option<PathBuf>,
    map: FxHashMap<Box<str>, Box<str>>,
}

impl LocationTable {
    /// Parses `id<TAB>text` lines. A malformed line is an error with its 1-based line number:
    /// no tab, an empty id or text, or an id given twice with different texts.
    pub fn parse(text: &str) -> Result<LocationTable> {
        let mut map: FxHashMap<Box<str>, Box<str>> = FxHashMap::default();
        // Line of each id's first entry, for the duplicate message.
        let mut first_line: FxHashMap<Box<str>, u64> = FxHashMap::default();
        for (i, raw) in text.split('\n').enumerate() {
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            let lineno = i as u64 + 1;
            let at = |msg: String| {
                Error::syntax(msg).at(Position {
                    line: lineno,
                    byte: 0,
                    event: None,
                })
            };
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let Some((id, src)) = line.split_once('\t') else {
                return Err(at(format!(
                    "a location table line is `id<TAB>File:line:col`; no tab in `{}`",
                    clip(line)
                )));
            };
            let (id, src) = (id.trim(), src.trim());
            if id.is_empty() {
                return Err(at("empty location id before the tab".into()));
            }
            if src.is_empty() {
                return Err(at(format!("empty source text for location `{}`", clip(id))));
            }
            match map.get(id) {
                Some(old) if &**old != src => {
                    return Err(at(format!(
                        "location `{}` is mapped twice: `{}` on line {} and `{}`",
                        clip(id),
                        clip(old),
                        first_line[id],
                        clip(src)
                    )))
                }
                Some(_) => {}
                None => {
                    map.insert(id.into(), src.into());
                    first_line.insert(id.into(), lineno);
                }
            }
        }
        Ok(LocationTable { path: None, map })
    }

    /// Reads and parses a table file; errors carry the file and line.
    pub fn read(path: &Path) -> Result<LocationTable> {
        let bytes = std::fs::read(path).map_err(|e| Error::from(e).in_file(path))?;
        let text =
            String::from_utf8(bytes).map_err(|_| Error::new(ErrorKind::NonUtf8).in_file(path))?;
        let mut t = LocationTable::parse(&text).map_err(|e| e.in_file(path))?;
        t.path = Some(path.to_path_buf());
        Ok(t)
    }

    /// The file the table was read from.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The source text of a location name.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.map.get(name).map(|s| &**s)
    }

    /// How many of the trace's location names the table maps (to warn about a table that
    /// belongs to another trace).
    pub fn coverage(&self, names: &Names) -> usize {
        names
            .locs
            .iter()
            .filter(|n| self.map.contains_key(*n))
            .count()
    }
}

/// At most this many characters of a bad line are echoed in an error.
const ECHO: usize = 80;

fn clip(s: &str) -> String {
    match s.char_indices().nth(ECHO) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Compression and trace-format extensions stripped from a trace's file name to find its
/// table (`NAME.std.xz` → `NAME`).
const COMPRESSION: [&str; 3] = ["gz", "xz", "zst"];
const FORMATS: [&str; 7] = ["std", "rr", "csv", "golog", "rpb", "bin", "txt"];

/// The file name of a trace without its compression and format extensions.
pub fn trace_stem(trace: &Path) -> Option<String> {
    let mut name = trace.file_name()?.to_str()?.to_string();
    for exts in [&COMPRESSION[..], &FORMATS[..]] {
        if let Some((stem, ext)) = name.rsplit_once('.') {
            if !stem.is_empty() && exts.contains(&ext.to_ascii_lowercase().as_str()) {
                name = stem.to_string();
            }
        }
    }
    Some(name)
}

/// Where a trace's table is looked for, in order: `TRACE.locs`, `STEM.locs` beside the trace
/// (`STEM` = [`trace_stem`]), `locs/STEM.locs` in the trace's directory. Empty for standard
/// input (`-`).
pub fn sidecar_candidates(trace: &Path) -> Vec<PathBuf> {
    if trace.as_os_str() == "-" {
        return Vec::new();
    }
    let Some(file) = trace.file_name() else {
        return Vec::new();
    };
    let dir = trace.parent().unwrap_or(Path::new(""));
    let mut with_locs = file.to_os_string();
    with_locs.push(".locs");
    let mut out = vec![dir.join(with_locs)];
    if let Some(stem) = trace_stem(trace) {
        let p = dir.join(format!("{stem}.locs"));
        if !out.contains(&p) {
            out.push(p);
        }
        out.push(dir.join("locs").join(format!("{stem}.locs")));
    }
    out
}

/// The first existing sidecar table of a trace (see [`sidecar_candidates`]).
pub fn find_sidecar(trace: &Path) -> Option<PathBuf> {
    sidecar_candidates(trace).into_iter().find(|p| p.is_file())
}

/// The files under a source root, so a location's path can be completed to one a viewer can
/// open: Java tracers record `TournamentBarrier.java`, not `src/jgfutil/TournamentBarrier.java`.
/// Built once before printing (SARIF `--source-root`); hidden directories are skipped.
#[derive(Clone, Debug, Default)]
pub struct SourceIndex {
    /// Relative paths (`/`-separated) of the files under the root, by file name.
    by_name: FxHashMap<String, Vec<String>>,
    files: usize,
    truncated: bool,
}

impl SourceIndex {
    /// At most this many files are indexed.
    pub const MAX_FILES: usize = 1 << 20;

    /// Walks `root` (symbolic links are not followed into directories).
    pub fn build(root: &Path) -> std::io::Result<SourceIndex> {
        let mut ix = SourceIndex::default();
        let mut stack = vec![(root.to_path_buf(), String::new())];
        while let Some((dir, rel)) = stack.pop() {
            let mut entries: Vec<_> = std::fs::read_dir(&dir)?.filter_map(|e| e.ok()).collect();
            entries.sort_by_key(|e| e.file_name());
            for e in entries {
                let Some(name) = e.file_name().to_str().map(str::to_string) else {
                    continue;
                };
                let Ok(ft) = e.file_type() else {
                    continue;
                };
                let path = if rel.is_empty() {
                    name.clone()
                } else {
                    format!("{rel}/{name}")
                };
                if ft.is_dir() {
                    if !name.starts_with('.') {
                        stack.push((e.path(), path));
                    }
                } else {
                    if ix.files >= Self::MAX_FILES {
                        ix.truncated = true;
                        return Ok(ix);
                    }
                    ix.files += 1;
                    ix.by_name.entry(name).or_default().push(path);
                }
            }
        }
        Ok(ix)
    }

    /// Number of files indexed.
    pub fn files(&self) -> usize {
        self.files
    }

    /// True if the walk stopped at [`SourceIndex::MAX_FILES`].
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// The path under the root of a location's (relative) `path`: `path` itself if the root
    /// has it, else the one file whose path ends with `path`'s components; `None` if there is
    /// none or more than one (the caller keeps `path`).
    pub fn resolve(&self, path: &str) -> Option<&str> {
        let norm = path.replace('\\', "/");
        let norm = norm.trim_start_matches("./");
        let name = norm.rsplit('/').next()?;
        let cands = self.by_name.get(name)?;
        if let Some(c) = cands.iter().find(|c| *c == norm) {
            return Some(c);
        }
        let suffix = format!("/{norm}");
        let mut it = cands.iter().filter(|c| c.ends_with(&suffix));
        match (it.next(), it.next()) {
            (Some(c), None) => Some(c),
            _ => None,
        }
    }
}

/// Trace-file lines of the events a report shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum EventLines<'a> {
    /// The input has no lines (binary) or they were not looked up.
    #[default]
    Unknown,
    /// Event `i` is on line `i + 1` (one event per line, nothing else in the file).
    OnePerLine,
    /// The line of every event (an in-memory [`Trace`](crate::trace::Trace)'s `lines`).
    All(&'a [u64]),
    /// The lines of some events (those a report shows), by event index.
    Some(BTreeMap<u64, u64>),
}

impl<'a> EventLines<'a> {
    /// The lines of an in-memory trace.
    pub fn of_trace(lines: &'a [u64]) -> EventLines<'a> {
        if lines.is_empty() {
            EventLines::Unknown
        } else if lines.iter().enumerate().all(|(i, &l)| l == i as u64 + 1) {
            EventLines::OnePerLine
        } else {
            EventLines::All(lines)
        }
    }

    /// The line of event `index`, when known.
    pub fn line(&self, index: u64) -> Option<u64> {
        match self {
            EventLines::Unknown => None,
            EventLines::OnePerLine => Some(index + 1),
            EventLines::All(l) => l.get(index as usize).copied(),
            EventLines::Some(m) => m.get(&index).copied(),
        }
    }

    /// The line of event `index` when it is not the obvious `index + 1` (a comment, blank
    /// line or header came before it), for "event N (line L)" in text reports.
    pub fn surprising(&self, index: u64) -> Option<u64> {
        self.line(index).filter(|&l| l != index + 1)
    }

    /// Reads `src` up to the last of `wanted` (event indices) and keeps their lines: the
    /// second, cold pass a streaming analysis needs once it knows which events it reports.
    /// `Unknown` if the source has no lines.
    pub fn scan<S: EventSource + ?Sized>(src: &mut S, wanted: &[u64]) -> Result<EventLines<'a>> {
        let mut wanted: Vec<u64> = wanted.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        let mut map = BTreeMap::new();
        let mut next = wanted.iter().copied().peekable();
        let mut index = 0u64;
        while let Some(&want) = next.peek() {
            if src.next_event()?.is_none() {
                break;
            }
            if index == want {
                let line = src.position().line;
                if line == 0 {
                    return Ok(EventLines::Unknown);
                }
                map.insert(index, line);
                next.next();
            }
            index += 1;
        }
        Ok(EventLines::Some(map))
    }
}

/// The location side of a report: the trace's names, an optional table, event lines.
#[derive(Clone, Copy, Debug)]
pub struct Locations<'a> {
    pub names: &'a Names,
    pub table: Option<&'a LocationTable>,
}

impl<'a> Locations<'a> {
    /// The text to show for a location: its table entry, else its name (`-` for none).
    pub fn show(&self, loc: LocId) -> &'a str {
        let name = self.names.loc(loc);
        self.table.and_then(|t| t.get(name)).unwrap_or(name)
    }

    /// The table entry of a location, if a table is in use and maps it.
    pub fn source(&self, loc: LocId) -> Option<&'a str> {
        if loc.is_none() {
            return None;
        }
        self.table?.get(self.names.loc(loc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tabs_skips_comments_and_blank_lines() {
        let t = LocationTable::parse(
            "# made for a test\n1\tA.java:5:2\n\n2\tB.java:7:24\r\n3\tclinit:pkg/C\n1\tA.java:5:2\n",
        )
        .unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t.get("1"), Some("A.java:5:2"));
        assert_eq!(t.get("2"), Some("B.java:7:24"));
        assert_eq!(t.get("3"), Some("clinit:pkg/C"));
        assert_eq!(t.get("4"), None);
    }

    #[test]
    fn malformed_lines_are_typed_errors_with_file_and_line() {
        let e = LocationTable::parse("1\tA.java:1:1\n2 A.java:2:1\n").unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Syntax(_)));
        assert_eq!(e.position().unwrap().line, 2);
        assert!(e.to_string().starts_with("2: syntax:"), "{e}");
        for (bad, line) in [
            ("\tA.java:1:1\n", 1),
            ("# c\n7\t\n", 2),
            ("1\tA.java:1:1\n1\tB.java:1:1\n", 2),
        ] {
            let e = LocationTable::parse(bad).unwrap_err();
            assert_eq!(e.position().unwrap().line, line, "{bad:?}: {e}");
        }
        let e = LocationTable::parse("1\tA:1\n1\tB:2\n").unwrap_err();
        assert!(e.to_string().contains("mapped twice"), "{e}");
        // A long bad line is not echoed whole.
        let long = "x".repeat(10_000);
        let e = LocationTable::parse(&long).unwrap_err();
        assert!(e.to_string().len() < 300, "{e}");

        let dir = std::env::temp_dir().join(format!("racepred-locs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bad.locs");
        std::fs::write(&p, "1\tA.java:1:1\nnot a table line\n").unwrap();
        let e = LocationTable::read(&p).unwrap_err();
        assert_eq!(e.path(), Some(p.as_path()));
        assert!(
            e.to_string()
                .starts_with(&format!("{}:2: syntax:", p.display())),
            "{e}"
        );
        let p = dir.join("good.locs");
        std::fs::write(&p, "1\tA.java:1:1\n").unwrap();
        assert_eq!(LocationTable::read(&p).unwrap().path(), Some(p.as_path()));
        assert!(LocationTable::read(&dir.join("missing.locs")).is_err());
    }

    #[test]
    fn sidecar_candidates_in_order() {
        let c = sidecar_candidates(Path::new("/d/jgf_moldyn_t2.std.xz"));
        assert_eq!(
            c,
            [
                PathBuf::from("/d/jgf_moldyn_t2.std.xz.locs"),
                PathBuf::from("/d/jgf_moldyn_t2.locs"),
                PathBuf::from("/d/locs/jgf_moldyn_t2.locs"),
            ]
        );
        let c = sidecar_candidates(Path::new("t.std"));
        assert_eq!(c[0], PathBuf::from("t.std.locs"));
        assert_eq!(c[1], PathBuf::from("t.locs"));
        assert_eq!(c[2], PathBuf::from("locs/t.locs"));
        // No extension: `TRACE.locs` and `STEM.locs` are one file.
        assert_eq!(sidecar_candidates(Path::new("d/run")).len(), 2);
        assert!(sidecar_candidates(Path::new("-")).is_empty());
        assert_eq!(trace_stem(Path::new("a.b.rpb.zst")).as_deref(), Some("a.b"));
        assert_eq!(trace_stem(Path::new(".xz")).as_deref(), Some(".xz"));
    }

    #[test]
    fn source_index_completes_bare_file_names() {
        let root = std::env::temp_dir().join(format!("racepred-srcix-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for f in [
            "src/pkg/A.java",
            "x/B.java",
            "y/B.java",
            ".git/A.java",
            "C.java",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let ix = SourceIndex::build(&root).unwrap();
        assert_eq!(ix.files(), 4); // .git is skipped
        assert!(!ix.truncated());
        assert_eq!(ix.resolve("A.java"), Some("src/pkg/A.java"));
        assert_eq!(ix.resolve("pkg/A.java"), Some("src/pkg/A.java"));
        assert_eq!(ix.resolve("./src/pkg/A.java"), Some("src/pkg/A.java"));
        assert_eq!(ix.resolve("C.java"), Some("C.java"));
        assert_eq!(ix.resolve("B.java"), None, "ambiguous");
        assert_eq!(ix.resolve("y/B.java"), Some("y/B.java"));
        assert_eq!(ix.resolve("kg/A.java"), None, "whole components only");
        assert_eq!(ix.resolve("Z.java"), None);
        assert!(SourceIndex::build(&root.join("missing")).is_err());
    }

    #[test]
    fn event_lines() {
        assert_eq!(EventLines::of_trace(&[]), EventLines::Unknown);
        assert_eq!(EventLines::of_trace(&[1, 2, 3]), EventLines::OnePerLine);
        let l = [2, 3, 5];
        let e = EventLines::of_trace(&l);
        assert_eq!(e.line(2), Some(5));
        assert_eq!(e.surprising(0), Some(2));
        assert_eq!(EventLines::OnePerLine.surprising(4), None);
        let text = "# header\nT0|w(x)|1\n\nT1|w(x)|2\nT1|r(x)|3\n";
        let mut src = crate::trace::std_format::StdReader::new(text.as_bytes());
        let e = EventLines::scan(&mut src, &[2, 0]).unwrap();
        assert_eq!((e.line(0), e.line(1), e.line(2)), (Some(2), None, Some(5)));
    }
}
