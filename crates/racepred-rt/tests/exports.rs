//! The built `libracepred_rt.so` has the soname and exports the entry points programs
//! built with `gcc -fsanitize=thread` need. Cargo does not build a `cdylib` for
//! integration tests: run `cargo build -p racepred-rt` first (crates/racepred-cli's record
//! tests do it themselves).

use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>/libracepred_rt.so`, from this test's own path (`target/<profile>/deps/`).
fn runtime() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("libracepred_rt.so")
}

fn tool(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn soname_and_entry_points() {
    let lib = runtime();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = Command::new(cargo)
        .args(["build", "-q", "-p", "racepred-rt"])
        .status()
        .unwrap();
    assert!(
        built.success() && lib.exists(),
        "{} was not built",
        lib.display()
    );
    if !tool("nm") || !tool("readelf") {
        eprintln!("skipped: nm or readelf (binutils) not installed");
        return;
    }
    let dynamic = Command::new("readelf")
        .arg("-d")
        .arg(&lib)
        .output()
        .unwrap();
    let dynamic = String::from_utf8_lossy(&dynamic.stdout);
    assert!(
        dynamic.contains("Library soname: [libtsan.so.2]"),
        "{dynamic}"
    );
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .unwrap();
    let syms: std::collections::HashSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .nth(2)
                .map(|s| s.split('@').next().unwrap().to_string())
        })
        .collect();
    let mut want: Vec<String> = vec![
        "__tsan_init",
        "__tsan_func_entry",
        "__tsan_func_exit",
        "__tsan_read_range",
        "__tsan_write_range",
        "__tsan_read_range_pc",
        "__tsan_write_range_pc",
        "__tsan_vptr_update",
        "__tsan_vptr_read",
        "__tsan_memcpy",
        "__tsan_memset",
        "__tsan_memmove",
        "__tsan_atomic_thread_fence",
        "__tsan_atomic_signal_fence",
        "__tsan_acquire",
        "__tsan_release",
        "__tsan_ignore_thread_begin",
        "__tsan_ignore_thread_end",
        "pthread_create",
        "pthread_join",
        "pthread_mutex_lock",
        "pthread_mutex_unlock",
        "pthread_cond_wait",
        "pthread_cond_timedwait",
        "pthread_cond_signal",
        "pthread_cond_broadcast",
        "pthread_rwlock_rdlock",
        "pthread_rwlock_wrlock",
        "pthread_rwlock_unlock",
        "pthread_barrier_wait",
        "sem_wait",
        "sem_post",
        "pthread_once",
        "free",
        "realloc",
        "_exit",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    for n in [1, 2, 4, 8, 16] {
        for rw in ["read", "write"] {
            want.push(format!("__tsan_{rw}{n}"));
            want.push(format!("__tsan_{rw}{n}_pc"));
            want.push(format!("__tsan_volatile_{rw}{n}"));
            if n > 1 {
                want.push(format!("__tsan_unaligned_{rw}{n}"));
            }
        }
        for op in [
            "load",
            "store",
            "exchange",
            "fetch_add",
            "fetch_sub",
            "fetch_and",
            "fetch_or",
            "fetch_xor",
            "fetch_nand",
            "compare_exchange_strong",
            "compare_exchange_weak",
            "compare_exchange_val",
        ] {
            want.push(format!("__tsan_atomic{}_{op}", n * 8));
        }
    }
    let missing: Vec<&String> = want.iter().filter(|w| !syms.contains(*w)).collect();
    assert!(missing.is_empty(), "not exported: {missing:?}");
}
