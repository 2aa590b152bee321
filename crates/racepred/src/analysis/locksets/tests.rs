//! Unit tests of the lockset family's shared machinery.

use super::*;

#[test]
fn table_interns_and_caches() {
    let mut t = LocksetTable::new();
    let a = t.with(LocksetTable::EMPTY, LockId(3));
    let ab = t.with(a, LockId(1));
    let b = t.with(LocksetTable::EMPTY, LockId(1));
    let ba = t.with(b, LockId(3));
    assert_eq!(ab, ba);
    assert_eq!(t.locks(ab), &[1, 3]);
    assert_eq!(t.without(ab, LockId(1)), a);
    let c = t.with(LocksetTable::EMPTY, LockId(67)); // same mask bit as 3
    assert!(t.disjoint(a, c));
    assert!(!t.disjoint(a, ab));
    assert_eq!(t.intersect(ab, a), a);
    assert_eq!(t.intersect(ab, c), LocksetTable::EMPTY);
}

/// Disjointness, inclusion and intersection against sets, for locks on both sides of
/// the masks' exact range (31) and locks sharing a `% 32` / `% 64` bit.
#[test]
fn table_tests_agree_with_sets_across_the_mask_range() {
    use std::collections::BTreeSet;
    let pool = [0u32, 1, 3, 29, 30, 31, 32, 35, 63, 64, 67, 95, 1000];
    let mut t = LocksetTable::new();
    let mut sets = vec![(LocksetTable::EMPTY, BTreeSet::new())];
    // Every subset of up to three locks of the pool.
    for (i, &a) in pool.iter().enumerate() {
        let la = t.with(LocksetTable::EMPTY, LockId(a));
        sets.push((la, BTreeSet::from([a])));
        for (j, &b) in pool.iter().enumerate().skip(i + 1) {
            let lab = t.with(la, LockId(b));
            sets.push((lab, BTreeSet::from([a, b])));
            for &c in pool.iter().skip(j + 1) {
                sets.push((t.with(lab, LockId(c)), BTreeSet::from([a, b, c])));
            }
        }
    }
    for (a, sa) in &sets {
        assert_eq!(t.locks(*a), sa.iter().copied().collect::<Vec<_>>());
        for (b, sb) in &sets {
            assert_eq!(t.disjoint(*a, *b), sa.is_disjoint(sb), "{sa:?} {sb:?}");
            assert_eq!(t.subset(*a, *b), sa.is_subset(sb), "{sa:?} {sb:?}");
            let (ma, mb) = (t.mask(*a), t.mask(*b));
            assert_eq!(
                masks_disjoint(ma, mb, || t.disjoint_slow(*a, *b)),
                sa.is_disjoint(sb)
            );
            assert_eq!(
                masks_subset(ma, mb, || t.subset_slow(*a, *b)),
                sa.is_subset(sb)
            );
            let i = t.intersect(*a, *b);
            let si: Vec<u32> = sa.intersection(sb).copied().collect();
            assert_eq!(t.locks(i), si);
        }
    }
}

#[test]
fn holdings_nest_and_hand_over_hand() {
    let mut h = Holdings::new();
    let t = ThreadId(1);
    assert!(h.acquire(t, LockId(0)));
    assert!(!h.acquire(t, LockId(0)));
    assert!(h.acquire(t, LockId(1)));
    assert!(!h.release(t, LockId(0)));
    assert!(h.release(t, LockId(0))); // hand-over-hand: 0 before 1
    assert_eq!(h.table.locks(h.lockset(t)), &[1]);
    assert!(h.release(t, LockId(1)));
    assert_eq!(h.lockset(t), LocksetTable::EMPTY);
    assert!(!h.release(t, LockId(5)));
}

#[test]
fn access_log_suffix_and_bound() {
    let mut log = AccessLog::new(Some(2));
    for i in 0..30u32 {
        let a = Access {
            index: i as u64,
            time: i,
            ls: 0,
            loc: LocId(i),
        };
        log.push(VarId(0), ThreadId(1), i % 2 == 0, a);
    }
    let mut seen = Vec::new();
    log.for_unordered(
        VarId(0),
        ThreadId(0),
        None,
        true,
        |_| true,
        |_, list, _| seen.extend(list.iter().map(|a| a.index)),
    );
    seen.sort();
    assert_eq!(seen, vec![26, 27, 28, 29]);
    let mut c = VectorClock::new();
    c.set(ThreadId(1), 27);
    let mut seen = Vec::new();
    log.for_unordered(
        VarId(0),
        ThreadId(0),
        Some(&c),
        true,
        |_| true,
        |_, list, _| seen.extend(list.iter().map(|a| a.index)),
    );
    seen.sort();
    assert_eq!(seen, vec![28, 29]);
}

/// One access of [`shadow_logs_agree_with_the_history`]: thread, lockset (bits of
/// `LOCK_POOL`).
type Acc = (u32, u8);

/// Locks on both sides of the masks' exact range.
pub(super) const LOCK_POOL: [u32; 6] = [0, 1, 2, 30, 31, 40];

pub(super) fn lockset_of(table: &mut LocksetTable, bits: u8) -> LsId {
    let mut ls = LocksetTable::EMPTY;
    for (i, &l) in LOCK_POOL.iter().enumerate() {
        if bits & (1 << i) != 0 {
            ls = table.with(ls, LockId(l));
        }
    }
    ls
}

/// The accesses of `history` (as (index, thread, lockset)) that none later dominates
/// ([`Pruner`]), straight from the definition.
fn undominated_by_definition(
    table: &LocksetTable,
    history: &[(u64, u32, LsId)],
    clockless: bool,
) -> Vec<u64> {
    let mut kept = Vec::new();
    for (i, &(index, u, ls)) in history.iter().enumerate() {
        let subs = history[i + 1..].iter().filter(|g| table.subset(g.2, ls));
        let threads: std::collections::BTreeSet<u32> = subs.map(|g| g.1).collect();
        let dominated =
            threads.contains(&u) || (clockless && threads.iter().filter(|&&v| v != u).count() >= 2);
        if !dominated {
            kept.push(index);
        }
    }
    kept
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// A site's log, pruned only when full, answers every check as the whole history
    /// would (the latest racing access, by index), and pruned at the end holds exactly
    /// the undominated accesses. Threads up to 19 (beyond the pruner's buckets), locks
    /// beyond the exact mask range, and accesses sorted by lockset size, so that a
    /// thread keeps more than a bucket holds.
    #[test]
    fn shadow_logs_agree_with_the_history(
        clockless in proptest::bool::ANY,
        accesses in proptest::collection::vec(
            proptest::prop_oneof![
                (0u32..4, 0u8..64),
                (0u32..20, 0u8..64),
                (0u32..2, 0u8..8),
            ],
            1..120,
        ),
        queries in proptest::collection::vec((0u32..20, 0u8..64, 0u32..120), 1..8),
        by_size in proptest::bool::ANY,
    ) {
        let mut accesses: Vec<Acc> = accesses;
        if by_size {
            // Locksets never smaller later: none dominates an earlier access of its
            // thread, so a thread keeps many (more than a bucket holds).
            accesses.sort_by_key(|a| a.1.count_ones());
        }
        let mut table = LocksetTable::new();
        let mut pruner = Pruner::default();
        let mut site = ShadowSite {
            loc: LocId(0),
            write: true,
            threads: 0,
            empty: 0,
            entries: SmallVec::new(),
            groups: NIL,
        };
        let mut history: Vec<(u64, u32, LsId)> = Vec::new();
        let mut peak = 0;
        // Each access's local time: its index (so per thread increasing).
        for (i, &(thread, bits)) in accesses.iter().enumerate() {
            let ls = lockset_of(&mut table, bits);
            let index = i as u64;
            // Checks before the push: every query's latest racing access.
            for &(t, qbits, known) in &queries {
                let qls = lockset_of(&mut table, qbits);
                // A clock that knows every access of each thread up to `known` (with
                // clocks only), as time = index.
                let unknown = |u: u32, time: u32| {
                    clockless || time > known.wrapping_add(u) % 120
                };
                let races = |u: u32, time: u32, els: LsId| {
                    u != t && unknown(u, time) && table.disjoint(els, qls)
                };
                let by_log = site
                    .entries
                    .iter()
                    .rev()
                    .find(|e| races(e.thread, e.time, e.ls))
                    .map(|e| e.index);
                let by_history = history
                    .iter()
                    .rev()
                    .find(|a| races(a.1, a.0 as u32, a.2))
                    .map(|a| a.0);
                proptest::prop_assert_eq!(by_log, by_history);
            }
            let entry = ShadowEntry {
                ls,
                time: if clockless { 0 } else { i as u32 },
                index,
                thread,
                mask: table.mask(ls),
            };
            if clockless {
                log_access::<true>(&mut site, &mut pruner, &table, entry);
            } else {
                log_access::<false>(&mut site, &mut pruner, &table, entry);
            }
            history.push((index, thread, ls));
            // Bounded: the log's room is at most 8/3 of the most undominated accesses
            // the site has had (the pruning keeps them all and grows the room to twice
            // its size only when they fill more than three quarters of it).
            let undominated = undominated_by_definition(&table, &history, clockless);
            peak = peak.max(undominated.len());
            proptest::prop_assert!(3 * site.entries.capacity() <= 8 * peak);
        }
        let kept = pruner.prune_by(clockless, site.entries.as_mut_slice(), site.threads, &table);
        let logged: Vec<u64> = site.entries[..kept].iter().map(|e| e.index).collect();
        proptest::prop_assert_eq!(logged, undominated_by_definition(&table, &history, clockless));
        // The pruner's buckets are empty again.
        proptest::prop_assert!(pruner.len.iter().all(|&n| n == 0));
        proptest::prop_assert!(pruner.masks.iter().flatten().all(|&m| m == u32::MAX));
    }
}
