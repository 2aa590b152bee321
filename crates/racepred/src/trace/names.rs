//! Name tables: each name is interned once into a dense id.

use super::event::NameKind;

/// One name table: dense ids in order of first appearance.
///
/// Invariant: name `id` is `text[ends.range(id)]`; every name appears once, in the
/// direct table or in the hash table, never both. Names are stored end to end in one string
/// (no allocation per name), and the hash table holds ids only, hashing the stored bytes.
///
/// Names of the form `<prefix><decimal>` (RAPID's `T12`, `V3`, `L0`, RoadRunner's integer
/// locations; the prefix is fixed by the first such name) are looked up through a direct
/// table indexed by the number instead of hashing the bytes. A number goes to the
/// direct table if it is below `DIRECT_LIMIT` or below twice the number of names, so the
/// table never holds more than 2 slots per name beyond the limit; a larger number goes to
/// the hash table.
#[derive(Clone, Debug, Default)]
pub struct Interner {
    text: String,
    ends: Ends,
    map: hashbrown::HashTable<u32>,
    by_num: Vec<u32>,
    prefix: Option<Box<[u8]>>,
}

/// Numbers below this always use the direct table (16 MiB at most).
const DIRECT_LIMIT: u64 = 1 << 22;

#[inline]
fn hash_of(name: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(name)
}

/// Name `id` of a table's storage.
#[inline]
fn stored<'a>(text: &'a str, ends: &Ends, id: u32) -> &'a str {
    &text[ends.range(id)]
}

/// Where each name of an [`Interner`] ends in its text: 4 bytes a name instead of a `usize`'s
/// 8 (traces with millions of names). The text may still pass 4 GiB: the ids of the names
/// that end past each multiple of 2^32 are kept.
#[derive(Clone, Debug, Default)]
struct Ends {
    /// Per name: its end, modulo 2^32.
    low: Vec<u32>,
    /// The `k`-th: the first name that ends at or past `(k + 1) · 2^32`.
    wraps: Vec<u32>,
}

impl Ends {
    #[inline]
    fn len(&self) -> usize {
        self.low.len()
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.low.is_empty()
    }

    /// The end of name `i`.
    #[inline]
    fn end(&self, i: usize) -> usize {
        let high = if self.wraps.is_empty() {
            0
        } else {
            self.wraps.partition_point(|&w| w as usize <= i)
        };
        (high << 32) | self.low[i] as usize
    }

    /// Where name `id` is in the text.
    #[inline]
    fn range(&self, id: u32) -> std::ops::Range<usize> {
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.end(i - 1) };
        start..self.end(i)
    }

    /// Adds a name ending at `end`.
    #[inline]
    fn push(&mut self, end: usize) {
        let high = (end as u64 >> 32) as usize;
        if high > self.wraps.len() {
            assert_eq!(high, self.wraps.len() + 1, "a name of 4 GiB or more");
            self.wraps.push(self.low.len() as u32);
        }
        self.low.push(end as u32);
    }
}

impl Interner {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The name of an id.
    pub fn name(&self, id: u32) -> &str {
        assert!((id as usize) < self.ends.len(), "name id {id} out of range");
        stored(&self.text, &self.ends, id)
    }

    /// The name of an id, or `"?"` if it is out of range (e.g. `NONE`).
    pub fn name_or(&self, id: u32) -> &str {
        if (id as usize) < self.ends.len() {
            stored(&self.text, &self.ends, id)
        } else {
            "?"
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.ends.len() as u32).map(|id| stored(&self.text, &self.ends, id))
    }

    /// Splits `T12` into (`T`, 12) if the name is a prefix followed by a canonical decimal
    /// (no leading zero, at most 7 digits).
    #[inline]
    fn split_num(name: &[u8]) -> Option<(&[u8], u64)> {
        let digits = name.iter().rev().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 7 {
            return None;
        }
        let (pre, num) = name.split_at(name.len() - digits);
        if num.len() > 1 && num[0] == b'0' {
            return None;
        }
        let mut n = 0u64;
        for &b in num {
            n = n * 10 + (b - b'0') as u64;
        }
        Some((pre, n))
    }

    /// The number of a numbered name of this table's prefix (fixing the prefix if none is).
    #[inline]
    fn numbered(&mut self, name: &[u8]) -> Option<usize> {
        let (pre, n) = Self::split_num(name)?;
        match &self.prefix {
            Some(p) if super::lines::same_bytes(p, pre) => Some(n as usize),
            Some(_) => None,
            None => {
                self.prefix = Some(pre.into());
                Some(n as usize)
            }
        }
    }

    /// The id of `name`, interning it if new. `name` must be valid UTF-8 (readers check).
    #[inline]
    pub fn intern(&mut self, name: &[u8]) -> u32 {
        if let Some(n) = self.numbered(name) {
            if let Some(id) = self.intern_numbered(n, name) {
                return id;
            }
        } else if let Some(id) = self.find_hashed(name) {
            return id;
        }
        self.push_hashed(name)
    }

    /// The numbered name `name` (number `n`, this table's prefix): its id if it is interned
    /// or belongs in the direct table (then filed there); `None` for a new name that
    /// belongs in the hash table.
    #[inline]
    fn intern_numbered(&mut self, n: usize, name: &[u8]) -> Option<u32> {
        if let Some(&id) = self.by_num.get(n) {
            if id != u32::MAX {
                return Some(id);
            }
        }
        // Numbers at or past the limit may sit in the hash table (filed while the table
        // was smaller); below it they are always direct.
        if n as u64 >= DIRECT_LIMIT {
            if let Some(id) = self.find_hashed(name) {
                return Some(id);
            }
        }
        if (n as u64) >= DIRECT_LIMIT && n >= 2 * self.ends.len() {
            return None;
        }
        let id = self.push(name);
        // The usual case, the next number, without `resize`'s call and loop.
        if n == self.by_num.len() {
            self.by_num.push(id);
        } else {
            if n > self.by_num.len() {
                self.by_num.resize(n + 1, u32::MAX);
            }
            self.by_num[n] = id;
        }
        Some(id)
    }

    /// Adds the new name `name` and files it in the hash table.
    fn push_hashed(&mut self, name: &[u8]) -> u32 {
        let id = self.push(name);
        let Interner {
            text, ends, map, ..
        } = self;
        map.insert_unique(hash_of(name), id, |&k| {
            hash_of(stored(text, ends, k).as_bytes())
        });
        id
    }

    #[inline]
    fn find_hashed(&self, name: &[u8]) -> Option<u32> {
        if self.map.is_empty() {
            return None;
        }
        self.map
            .find(hash_of(name), |&k| {
                stored(&self.text, &self.ends, k).as_bytes() == name
            })
            .copied()
    }

    fn push(&mut self, name: &[u8]) -> u32 {
        self.push_str(std::str::from_utf8(name).expect("reader checked UTF-8"))
    }

    fn push_str(&mut self, name: &str) -> u32 {
        let id = self.ends.len() as u32;
        assert!(id < u32::MAX, "more than 2^32-1 names in one table");
        self.text.push_str(name);
        self.ends.push(self.text.len());
        id
    }

    /// The id of an interned numbered name at the start of `s`, ended by the byte `term`:
    /// this table's prefix, then a canonical decimal (as [`intern`](Self::intern) files it
    /// in the direct table). Returns the id and the position of `term`, or `None` for
    /// anything else (a new name, another shape, `s` ending first): the caller then takes
    /// the general path, which interns. The readers' fast path: no hashing, no allocation.
    #[inline(always)]
    pub fn lookup_numbered(&self, s: &[u8], term: u8) -> Option<(u32, usize)> {
        let p = self.prefix.as_deref()?;
        // The prefixes of real traces are one letter (`T`, `V`, `L`) or none (RoadRunner's
        // locations): those without a general comparison.
        let same = match p {
            [] => true,
            [c] => s.first() == Some(c),
            _ => s
                .get(..p.len())
                .is_some_and(|pre| super::lines::same_bytes(pre, p)),
        };
        if !same {
            return None;
        }
        let start = p.len();
        let first = s.get(start)?.wrapping_sub(b'0');
        if first > 9 {
            return None;
        }
        let mut n = first as usize;
        // One pass over a fixed 8-byte window (no bounds check per byte), the leading zero
        // tested once. Near the end of `s` the window is padded with NUL bytes, which end
        // the digits like the end of `s` does (`term` is never NUL). An eighth digit is
        // not canonical.
        debug_assert_ne!(term, 0);
        let mut padded = [0u8; 8];
        let window: &[u8; 8] = match s.get(start..start + 8) {
            Some(w) => w.try_into().expect("8 bytes"),
            None => {
                let rest = &s[start..];
                padded[..rest.len()].copy_from_slice(rest);
                &padded
            }
        };
        for (j, &b) in window.iter().enumerate().skip(1) {
            if b == term {
                if first == 0 && j > 1 {
                    return None; // a digit after a leading zero: not canonical
                }
                return match self.by_num.get(n) {
                    Some(&id) if id != u32::MAX => Some((id, start + j)),
                    _ => None,
                };
            }
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            n = n * 10 + d as usize;
        }
        None
    }

    /// The id of the interned name `<prefix><n>` if this table's numbered names have that
    /// prefix and it is in the direct table (the readers' fast path; `None` otherwise).
    #[inline(always)]
    pub fn lookup_number(&self, prefix: &[u8], n: usize) -> Option<u32> {
        if !super::lines::same_bytes(self.prefix.as_deref()?, prefix) {
            return None;
        }
        match self.by_num.get(n) {
            Some(&id) if id != u32::MAX => Some(id),
            _ => None,
        }
    }

    /// The id of `name` if it was interned.
    pub fn get(&self, name: &str) -> Option<u32> {
        let name = name.as_bytes();
        if let Some((pre, n)) = Self::split_num(name) {
            if self.prefix.as_deref() == Some(pre) {
                if let Some(&id) = self.by_num.get(n as usize) {
                    if id != u32::MAX {
                        return Some(id);
                    }
                }
                if n < DIRECT_LIMIT {
                    return None;
                }
            }
        }
        self.find_hashed(name)
    }
}

/// All name tables of a trace.
#[derive(Clone, Debug, Default)]
pub struct Names {
    pub threads: Interner,
    pub vars: Interner,
    pub locks: Interner,
    pub locs: Interner,
    pub conds: Interner,
    pub methods: Interner,
    pub addrs: Interner,
}

impl Names {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn table(&self, kind: NameKind) -> &Interner {
        match kind {
            NameKind::Thread => &self.threads,
            NameKind::Var => &self.vars,
            NameKind::Lock => &self.locks,
            NameKind::Loc => &self.locs,
            NameKind::Cond => &self.conds,
            NameKind::Method => &self.methods,
            NameKind::Addr => &self.addrs,
        }
    }

    pub fn table_mut(&mut self, kind: NameKind) -> &mut Interner {
        match kind {
            NameKind::Thread => &mut self.threads,
            NameKind::Var => &mut self.vars,
            NameKind::Lock => &mut self.locks,
            NameKind::Loc => &mut self.locs,
            NameKind::Cond => &mut self.conds,
            NameKind::Method => &mut self.methods,
            NameKind::Addr => &mut self.addrs,
        }
    }

    /// The location named `name` in a trace, interned; `-` is no location
    /// ([`LocId::NONE`](super::LocId::NONE)): what [`Names::loc`], reports and writers give
    /// an event without one, so that it reads back as none.
    #[inline]
    pub fn intern_loc(&mut self, name: &[u8]) -> super::LocId {
        if name == b"-" {
            super::LocId::NONE
        } else {
            super::LocId(self.locs.intern(name))
        }
    }

    /// The name of a location for reports (`"-"` when the event has none).
    pub fn loc(&self, loc: super::LocId) -> &str {
        if loc.is_none() {
            "-"
        } else {
            self.locs.name_or(loc.0)
        }
    }

    pub fn thread(&self, t: super::ThreadId) -> &str {
        self.threads.name_or(t.0)
    }

    pub fn var(&self, v: super::VarId) -> &str {
        self.vars.name_or(v.0)
    }

    pub fn lock(&self, l: super::LockId) -> &str {
        self.locks.name_or(l.0)
    }

    /// The name of the target of an event, in the table its operation uses.
    pub fn target(&self, ev: &super::Event) -> &str {
        if ev.target == u32::MAX {
            return "";
        }
        self.table(ev.op.target_kind()).name_or(ev.target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dash_is_no_location() {
        let mut n = Names::default();
        assert!(n.intern_loc(b"-").is_none());
        let a = n.intern_loc(b"12");
        assert_eq!(n.intern_loc(b"--"), super::super::LocId(1));
        assert_eq!(n.intern_loc(b"12"), a);
        let none = n.intern_loc(b"-");
        assert_eq!(n.loc(none), "-");
        assert_eq!(n.locs.len(), 2);
    }

    #[test]
    fn fast_and_slow_paths_agree() {
        let mut i = Interner::new();
        let a = i.intern(b"V3");
        let b = i.intern(b"x");
        let c = i.intern(b"L3"); // other prefix: hash path
        let d = i.intern(b"V03"); // leading zero: hash path
        let e = i.intern(b"V12345678"); // too many digits: hash path
        assert_eq!(i.intern(b"V3"), a);
        assert_eq!(i.intern(b"x"), b);
        assert_eq!(i.intern(b"L3"), c);
        assert_eq!(i.intern(b"V03"), d);
        assert_eq!(i.intern(b"V12345678"), e);
        assert_eq!(i.len(), 5);
        assert_eq!(i.get("V3"), Some(a));
        assert_eq!(i.get("L3"), Some(c));
        assert_eq!(i.get("V03"), Some(d));
        assert_eq!(i.get("V4"), None);
        assert_eq!(i.name(d), "V03");
    }

    #[test]
    fn large_numbers_go_direct_once_the_table_is_dense_enough() {
        let mut i = Interner::new();
        let big = DIRECT_LIMIT as usize + 5;
        // Sparse: the first big number is hashed.
        let a = i.intern(format!("{big}").as_bytes());
        assert!(i.by_num.len() < big);
        // Many names later the table may cover it: the hashed name is still found, once.
        let mut ids = Vec::new();
        for n in 0..(big / 2 + 10) {
            ids.push(i.intern(format!("{n}").as_bytes()));
        }
        let b = i.intern(format!("{}", big + 1).as_bytes());
        assert!(i.by_num.len() > big + 1, "dense enough: direct");
        assert_eq!(i.intern(format!("{big}").as_bytes()), a);
        assert_eq!(i.get(&format!("{big}")), Some(a));
        assert_eq!(i.get(&format!("{}", big + 1)), Some(b));
        assert_eq!(i.get(&format!("{}", big + 2)), None);
        assert_eq!(i.len(), ids.len() + 2);
        assert_eq!(i.name(a), format!("{big}"));
        assert_eq!(i.name(ids[7]), "7");
        assert_eq!(i.iter().count(), i.len());
    }

    #[test]
    fn bare_numbers_use_direct_map() {
        let mut i = Interner::new();
        assert_eq!(i.intern(b"42"), 0);
        assert_eq!(i.intern(b"7"), 1);
        assert_eq!(i.intern(b"42"), 0);
        assert_eq!(i.get("7"), Some(1));
        assert_eq!(i.name(0), "42");
    }

    /// What `lookup_numbered` must answer, the obvious way.
    fn lookup_reference(i: &Interner, s: &[u8], term: u8) -> Option<(u32, usize)> {
        let p = i.prefix.as_deref()?;
        let rest = s.strip_prefix(p)?;
        let len = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if len == 0 || len > 7 || rest.get(len) != Some(&term) || (len > 1 && rest[0] == b'0') {
            return None;
        }
        let n: usize = std::str::from_utf8(&rest[..len]).ok()?.parse().ok()?;
        match i.by_num.get(n) {
            Some(&id) if id != u32::MAX => Some((id, p.len() + len)),
            _ => None,
        }
    }

    /// Ends past 4 GiB (without a text that long): each name's range is where it was put,
    /// across one or several wraps of the 32-bit ends.
    #[test]
    fn ends_past_four_gib() {
        let g = 1usize << 32;
        let ends = [
            3,
            10,
            g - 1,
            g,
            g + 5,
            2 * g - 1,
            2 * g + 7,
            3 * g,
            3 * g + 1,
        ];
        let mut e = Ends::default();
        for &end in &ends {
            e.push(end);
        }
        assert_eq!(e.wraps, vec![3, 6, 7]);
        for (i, &end) in ends.iter().enumerate() {
            let start = if i == 0 { 0 } else { ends[i - 1] };
            assert_eq!(e.range(i as u32), start..end, "name {i}");
        }
    }

    proptest::proptest! {
        /// The readers' lookup answers as the obvious one on names of every shape (digit
        /// runs of 0 to 9 digits, leading zeros, other prefixes, every terminator), wherever
        /// the slice ends (with 8 bytes to look at or fewer).
        #[test]
        fn lookup_agrees_with_reference(
            prefix in proptest::sample::select(vec!["", "V", "T", "Var_"]),
            known in proptest::collection::vec(0u32..2000, 1..20),
            cases in proptest::collection::vec(
                (proptest::sample::select(vec!["", "V", "T", "Var_", "x"]),
                 // Mostly a known number (so that a wrong acceptance finds a name).
                 proptest::prop_oneof![3 => 0u64..20, 1 => 0u64..100_000_000],
                 0usize..3,
                 proptest::sample::select(vec![b'|', b')', b'\n', b'x', b' ', 0xFF]),
                 0usize..12),
                1..30),
        ) {
            let mut names = Interner::new();
            for n in &known {
                names.intern(format!("{prefix}{n}").as_bytes());
            }
            for (pre, n, zeros, end, tail) in cases {
                let n = if n < 20 { u64::from(known[n as usize % known.len()]) } else { n };
                let mut s = format!("{pre}{}{n}", "0".repeat(zeros)).into_bytes();
                s.push(end);
                s.extend(std::iter::repeat_n(b'9', tail));
                for cut in 0..=s.len() {
                    for term in [b'|', b')', b'\n'] {
                        proptest::prop_assert_eq!(
                            names.lookup_numbered(&s[..cut], term),
                            lookup_reference(&names, &s[..cut], term),
                            "{:?} {}", String::from_utf8_lossy(&s[..cut]), term
                        );
                    }
                }
            }
        }
    }
}
