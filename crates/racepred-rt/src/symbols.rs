//! Return addresses → `file:line:col`, as the trace is written (online: at the end).
//!
//! The module table comes from `dl_iterate_phdr` (the executable, PIE or not, and every
//! shared library with its load bias and `PT_LOAD` ranges; the same facts as
//! `/proc/self/maps`, without parsing). An address `pc` (a return address) is looked up
//! at `pc - 1`, inside the call instruction, as `pc - 1 - bias` in its module's DWARF with
//! the `addr2line` crate. Of the inlined frames there, the innermost one outside the
//! system headers (`/usr/include`, `/usr/lib`) names the location, so an access inside an
//! inlined `std::vector` method is reported at the user's line that called it. Without
//! debug information the location is `module+0xoffset`.

use std::ffi::CStr;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

struct Module {
    path: PathBuf,
    bias: u64,
    /// `[start, end)` of its loaded segments (run-time addresses).
    ranges: Vec<(u64, u64)>,
}

impl Module {
    /// Whether this is the runtime itself (the module holding this function's code).
    fn is_this_runtime(&self) -> bool {
        let own = Module::is_this_runtime as *const () as usize as u64;
        self.ranges.iter().any(|&(s, e)| s <= own && own < e)
    }
}

unsafe extern "C" fn collect(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: `data` is the `Vec` `symbolise` passed to `dl_iterate_phdr`, borrowed by
    // no one else during the call; `info` is valid for the call.
    let (mods, info) = unsafe { (&mut *(data as *mut Vec<Module>), &*info) };
    let name = if info.dlpi_name.is_null() {
        &[][..]
    } else {
        // SAFETY: a module's name is a C string.
        unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes()
    };
    let path = if name.is_empty() {
        // The executable (the first entry) has no name here.
        if !mods.is_empty() {
            return 0;
        }
        match std::fs::read_link("/proc/self/exe") {
            Ok(p) => p,
            Err(_) => return 0,
        }
    } else {
        // SAFETY: bytes of a C string: any bytes are a Unix `OsStr`.
        PathBuf::from(unsafe { std::ffi::OsStr::from_encoded_bytes_unchecked(name) })
    };
    let bias = info.dlpi_addr;
    let mut ranges = Vec::new();
    for i in 0..info.dlpi_phnum as usize {
        // SAFETY: `dlpi_phdr` holds `dlpi_phnum` program headers.
        let ph = unsafe { &*info.dlpi_phdr.add(i) };
        if ph.p_type == libc::PT_LOAD {
            let start = bias.wrapping_add(ph.p_vaddr);
            ranges.push((start, start.wrapping_add(ph.p_memsz)));
        }
    }
    mods.push(Module { path, bias, ranges });
    0
}

/// The DWARF of one module, read from its file (owned copies of the debug sections).
struct Dwarf(addr2line::Context<Reader>);

type Reader = gimli::EndianRcSlice<gimli::RunTimeEndian>;

impl Dwarf {
    /// `None` when the file cannot be read or parsed, or has no DWARF it can use.
    fn load(path: &Path) -> Option<Dwarf> {
        use object::{Object, ObjectSection};
        let data = std::fs::read(path).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let section = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
            let bytes = file
                .section_by_name(id.name())
                .and_then(|s| s.uncompressed_data().ok())
                .unwrap_or_default();
            Ok(gimli::EndianRcSlice::new(
                std::rc::Rc::from(&*bytes),
                endian,
            ))
        };
        let dwarf = gimli::Dwarf::load(section).ok()?;
        addr2line::Context::from_dwarf(dwarf).ok().map(Dwarf)
    }
}

/// Names return addresses, keeping what it learnt: the module table (read again when an
/// address is in no known module: a library loaded since) and each module's debug
/// information, loaded once.
#[derive(Default)]
pub struct Symboliser {
    mods: Vec<Module>,
    loaders: FxHashMap<usize, Option<Dwarf>>,
    cwd: Option<PathBuf>,
    read: bool,
}

impl Symboliser {
    pub fn new() -> Symboliser {
        Symboliser::default()
    }

    fn read_modules(&mut self) {
        let mut mods: Vec<Module> = Vec::new();
        // SAFETY: `collect` matches the callback type and only uses `data` as the `Vec`
        // given.
        unsafe {
            libc::dl_iterate_phdr(Some(collect), (&mut mods as *mut Vec<Module>).cast());
        }
        // Loaders are by module index: a new table starts them again.
        self.mods = mods;
        self.loaders.clear();
        if !self.read {
            self.cwd = std::env::current_dir().ok();
            self.read = true;
        }
    }

    fn module_of(&self, probe: u64) -> Option<usize> {
        self.mods
            .iter()
            .position(|m| m.ranges.iter().any(|&(s, e)| s <= probe && probe < e))
    }

    /// Whether return address `pc` is in this runtime or in the C library: a frame of a
    /// thread's start (the runtime's start routine, libc's call of `main`), not of the
    /// program.
    pub fn is_runtime_or_libc(&mut self, pc: u64) -> bool {
        if !self.read {
            self.read_modules();
        }
        let Some(mi) = self.module_of(pc.wrapping_sub(1)) else {
            return false;
        };
        let m = &self.mods[mi];
        m.is_this_runtime()
            || m.path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("libc.so"))
    }

    /// The name of return address `pc` as a frame of a stack: its location and the
    /// function it is in (`file:line:col in f`).
    pub fn frame_name(&mut self, pc: u64) -> String {
        let probe = pc.wrapping_sub(1);
        let found = self.name(pc).and_then(|_| {
            let mi = self.module_of(probe)?;
            let m = &self.mods[mi];
            let svma = probe.wrapping_sub(m.bias);
            let l = self.loaders.get(&mi)?.as_ref()?;
            source_line_in(l, svma, self.cwd.as_deref())
        });
        match found {
            Some((loc, Some(f))) => format!("{loc} in {}", demangle(&f)),
            Some((loc, None)) => loc,
            None => self.name(pc).unwrap_or_else(|| format!("{:#x}", pc - 1)),
        }
    }

    /// The name of return address `pc` (`None`: in no module).
    pub fn name(&mut self, pc: u64) -> Option<String> {
        let probe = pc.wrapping_sub(1);
        if !self.read {
            self.read_modules();
        }
        let mi = match self.module_of(probe) {
            Some(mi) => mi,
            None => {
                self.read_modules();
                self.module_of(probe)?
            }
        };
        let m = &self.mods[mi];
        let svma = probe.wrapping_sub(m.bias);
        // This runtime's own frames (a thread's start routine, a free of its own) are named
        // `libtsan.so.2+0xOFFSET`: its debug information is tens of megabytes, read whole.
        let loader = (self.loaders.entry(mi)).or_insert_with(|| {
            (!m.is_this_runtime())
                .then(|| Dwarf::load(&m.path))
                .flatten()
        });
        Some(
            loader
                .as_ref()
                .and_then(|l| source_line(l, svma, self.cwd.as_deref()))
                .unwrap_or_else(|| {
                    let base = m.path.file_name().unwrap_or(m.path.as_os_str());
                    format!("{}+{:#x}", base.to_string_lossy(), svma)
                }),
        )
    }
}

/// Names of the given return addresses (absent: not in any module).
pub fn symbolise(pcs: impl IntoIterator<Item = u64>) -> FxHashMap<u64, String> {
    let mut s = Symboliser::new();
    let mut out = FxHashMap::default();
    for pc in pcs {
        if let Some(n) = s.name(pc) {
            out.insert(pc, n);
        }
    }
    out
}

fn is_system(file: &str) -> bool {
    file.starts_with("/usr/include/") || file.starts_with("/usr/lib/")
}

/// `file:line:col` of `svma`: the innermost inlined frame outside the system headers, else
/// the innermost frame with a line.
fn source_line(l: &Dwarf, svma: u64, cwd: Option<&Path>) -> Option<String> {
    source_line_in(l, svma, cwd).map(|(loc, _)| loc)
}

/// [`source_line`] and the function that line is in (mangled): the chosen frame's, or,
/// when every frame is in the system headers, the outermost (the function the code was
/// inlined into: `std::vector`'s destructor rather than the allocator's `deallocate`).
fn source_line_in(l: &Dwarf, svma: u64, cwd: Option<&Path>) -> Option<(String, Option<Vec<u8>>)> {
    let mut frames = l.0.find_frames(svma).skip_all_loads().ok()?;
    let mut first: Option<(String, u32, u32)> = None;
    let mut chosen = None;
    let mut function = None;
    while let Ok(Some(f)) = frames.next() {
        let name = f.function.as_ref().map(|n| n.name.to_vec());
        let Some(loc) = f.location else {
            function = name.or(function);
            continue;
        };
        let (Some(file), Some(line)) = (loc.file, loc.line) else {
            function = name.or(function);
            continue;
        };
        let here = (file.to_string(), line, loc.column.unwrap_or(0));
        function = name.or(function);
        if !is_system(file) {
            chosen = Some(here);
            break;
        }
        first.get_or_insert(here);
    }
    let (file, line, col) = chosen.or(first)?;
    let shown = match cwd.and_then(|c| Path::new(&file).strip_prefix(c).ok()) {
        Some(rel) => rel.to_string_lossy().into_owned(),
        None => file,
    };
    let loc = if col > 0 {
        format!("{shown}:{line}:{col}")
    } else {
        format!("{shown}:{line}")
    };
    Some((loc, function))
}

/// A C++ name demangled by the C++ library's `__cxa_demangle` when the program has it
/// loaded, else as it is.
fn demangle(raw: &[u8]) -> String {
    let plain = || String::from_utf8_lossy(raw).into_owned();
    if !raw.starts_with(b"_Z") {
        return plain();
    }
    type Demangle = unsafe extern "C" fn(
        *const libc::c_char,
        *mut libc::c_char,
        *mut usize,
        *mut libc::c_int,
    ) -> *mut libc::c_char;
    // SAFETY: a lookup by a C string name in the loaded modules.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"__cxa_demangle".as_ptr()) };
    let Ok(name) = std::ffi::CString::new(raw) else {
        return plain();
    };
    if f.is_null() {
        return plain();
    }
    // SAFETY: `__cxa_demangle` has this C++ ABI signature.
    let f: Demangle = unsafe { core::mem::transmute::<*mut libc::c_void, Demangle>(f) };
    let mut status = 0;
    // SAFETY: a C string, no output buffer (it allocates one with `malloc`), a valid
    // status out-parameter.
    let out = unsafe {
        f(
            name.as_ptr(),
            core::ptr::null_mut(),
            core::ptr::null_mut(),
            &mut status,
        )
    };
    if out.is_null() || status != 0 {
        return plain();
    }
    // SAFETY: on success `out` is a C string allocated with `malloc`, ours to free once.
    unsafe {
        let s = CStr::from_ptr(out).to_string_lossy().into_owned();
        libc::free(out.cast());
        s
    }
}
