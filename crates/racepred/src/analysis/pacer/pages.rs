//! A table indexed by variable that is allocated a page at a time, where something is
//! stored: PACER keeps metadata only for the variables its sampled accesses touched, and
//! growing one dense table to the largest variable instead (copying it at each doubling
//! and initialising every new record) cost a fifth of FastTrack's time at r = 0.01 on the
//! JavaGrande montecarlo trace, whose 6.4·10^5 variables are mostly fresh objects. The
//! page directory is small and stays in cache, so a look-up is one more load than a `Vec`.

use std::ops::{Index, IndexMut};

/// log2 of the records per page. Small pages: a sampled access to a fresh object makes
/// 2 KiB of records, not 128 KiB, so traces of many short-lived objects touch few
/// records they never use.
const PAGE_BITS: u32 = 6;
const PAGE: usize = 1 << PAGE_BITS;
const MASK: usize = PAGE - 1;

#[derive(Debug)]
pub(super) struct Pages<T> {
    pages: Vec<Option<Box<[T; PAGE]>>>,
}

impl<T> Default for Pages<T> {
    fn default() -> Self {
        Pages { pages: Vec::new() }
    }
}

impl<T: Copy + Default> Pages<T> {
    /// Record `x`, if its page exists.
    #[inline(always)]
    pub(super) fn get(&self, x: usize) -> Option<&T> {
        match self.pages.get(x >> PAGE_BITS) {
            Some(Some(p)) => Some(&p[x & MASK]),
            _ => None,
        }
    }

    /// Makes record `x` exist (default if new).
    #[inline]
    pub(super) fn ensure(&mut self, x: usize) {
        let i = x >> PAGE_BITS;
        if !matches!(self.pages.get(i), Some(Some(_))) {
            self.new_page(i);
        }
    }

    #[cold]
    #[inline(never)]
    fn new_page(&mut self, i: usize) {
        if i >= self.pages.len() {
            self.pages.resize_with(i + 1, || None);
        }
        let page: Box<[T]> = vec![T::default(); PAGE].into_boxed_slice();
        self.pages[i] = Some(
            page.try_into()
                .unwrap_or_else(|_| unreachable!("PAGE long")),
        );
    }
}

impl<T> Index<usize> for Pages<T> {
    type Output = T;
    /// Record `x`; its page must exist.
    #[inline(always)]
    fn index(&self, x: usize) -> &T {
        match &self.pages[x >> PAGE_BITS] {
            Some(p) => &p[x & MASK],
            None => missing(x),
        }
    }
}

impl<T> IndexMut<usize> for Pages<T> {
    #[inline(always)]
    fn index_mut(&mut self, x: usize) -> &mut T {
        match &mut self.pages[x >> PAGE_BITS] {
            Some(p) => &mut p[x & MASK],
            None => missing(x),
        }
    }
}

#[cold]
#[inline(never)]
fn missing(x: usize) -> ! {
    panic!("no record for variable {x}: its page was never made")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_appear_where_records_are_made() {
        let mut t: Pages<u64> = Pages::default();
        assert!(t.get(0).is_none());
        t.ensure(5 * PAGE + 3);
        assert_eq!(t.get(5 * PAGE + 3), Some(&0));
        assert!(t.get(3).is_none() && t.get(6 * PAGE).is_none());
        t[5 * PAGE + 3] = 7;
        t.ensure(5 * PAGE + 9);
        assert_eq!((t[5 * PAGE + 3], t[5 * PAGE + 9]), (7, 0));
        assert_eq!(t.pages.iter().filter(|p| p.is_some()).count(), 1);
    }
}
