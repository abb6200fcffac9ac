//! Where a received file goes, safely: only inside the receiver's directory, under a plain name,
//! never through a symlink, never onto a device or a FIFO, never over an existing file without
//! `force`. A transfer in progress lives in `.ccarena-part-H` with its received ranges in
//! `.ccarena-ranges-H` (the sidecar), where H is 32 hex digits of the SHA-256 of the final name:
//! a fixed 46-byte name, so every final name up to the filesystem's limit (NAME_MAX, 255 bytes)
//! has a partial file that fits too. The sidecar records the final name, size and SHA-256, so a
//! partial file is resumed only for the very file it belongs to. The finished file is moved into
//! place only after its SHA-256 matched.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::ranges::RangeSet;
use crate::sha256::hex;
use crate::wire::{RejectCode, MAX_HELD_RANGES, MAX_NAME_BYTES};

/// First line of a sidecar (its format version).
/// (Version 2 added the `name` line, when partial files were named by a hash of the name.)
const SIDECAR_MAGIC: &str = "ccarena-udp-ranges 2";
/// Prefix of a partial file's name.
pub const PART_PREFIX: &str = ".ccarena-part-";
/// Prefix of a sidecar's name.
pub const RANGES_PREFIX: &str = ".ccarena-ranges-";

/// The partial file's and the sidecar's names for final name `name`:
/// `(".ccarena-part-H", ".ccarena-ranges-H")`, H the first 16 bytes of SHA-256(`name`) in hex
/// (46 and 48 bytes, whatever the length of `name`).
pub fn partial_names(name: &str) -> (String, String) {
    let mut h = crate::sha256::Sha256::new();
    h.update(name.as_bytes());
    let id = hex(&h.finish()[..16]);
    (format!("{PART_PREFIX}{id}"), format!("{RANGES_PREFIX}{id}"))
}

/// The partial files in `dir` (regular files named [`PART_PREFIX`]…) with their apparent sizes,
/// bytes: what a receiver starting there counts against its cap on partial bytes.
///
/// # Errors
/// The I/O error listing `dir`.
pub fn existing_partials(dir: &Path) -> io::Result<Vec<(PathBuf, u64)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if !entry.file_name().to_string_lossy().starts_with(PART_PREFIX) {
            continue;
        }
        if let Ok(m) = fs::symlink_metadata(entry.path()) {
            if m.is_file() {
                out.push((entry.path(), m.len()));
            }
        }
    }
    Ok(out)
}
/// Largest sidecar read, bytes (64 ranges need about 2.6 KB).
const MAX_SIDECAR_BYTES: u64 = 16 * 1024;

/// Check that `name` is one plain file name: not empty, at most [`MAX_NAME_BYTES`], no `/` or
/// `\`, no NUL or control character, not `.` or `..`, and no leading dot (hidden names are the
/// receiver's own partial files).
///
/// # Errors
/// Why the name is refused.
pub fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("empty file name");
    }
    if name.len() > MAX_NAME_BYTES {
        return Err("file name longer than 255 bytes");
    }
    if name.contains(['/', '\\']) {
        return Err("file name contains a path separator");
    }
    if name.chars().any(char::is_control) {
        return Err("file name contains a control character");
    }
    if name.starts_with('.') {
        return Err("file name starts with a dot");
    }
    Ok(())
}

/// A refusal: the REJECT code and its message.
pub type Refusal = (RejectCode, String);

/// The files of one transfer inside the receiver's directory.
#[derive(Debug)]
pub struct Placement {
    /// Where the finished file goes.
    pub final_path: PathBuf,
    /// The partial file being written.
    pub part_path: PathBuf,
    /// The sidecar listing the partial file's received ranges.
    pub ranges_path: PathBuf,
    /// The offered size, bytes.
    pub file_bytes: u64,
    /// The offered SHA-256.
    pub sha256: [u8; 32],
    /// The final name (recorded in the sidecar).
    pub name: String,
    /// The partial file did not exist before this placement created it.
    pub created: bool,
}

/// What an existing path is, without following a symlink: `None` if nothing is there.
fn kind_at(p: &Path) -> io::Result<Option<fs::FileType>> {
    match fs::symlink_metadata(p) {
        Ok(m) => Ok(Some(m.file_type())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn describe(t: &fs::FileType) -> &'static str {
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

impl Placement {
    /// Prepare to receive `name` (checked with [`check_name`]) of `file_bytes` into `dir`:
    /// refuse if the final name exists (unless `force` and it is a regular file), open or create
    /// the partial file (never following a symlink, never opening a non-regular file) and read
    /// the sidecar when it describes the same file (size and SHA-256), else start from nothing.
    /// Returns the placement, the open partial file and the ranges it already holds.
    ///
    /// # Errors
    /// A [`Refusal`] for the sender.
    pub fn open(dir: &Path, name: &str, file_bytes: u64, sha256: [u8; 32], force: bool) -> Result<(Placement, File, RangeSet), Refusal> {
        check_name(name).map_err(|m| (RejectCode::BadName, m.to_string()))?;
        let io_err = |e: io::Error| (RejectCode::Io, format!("{name}: {e}"));
        let (part, ranges) = partial_names(name);
        let mut p = Placement {
            final_path: dir.join(name),
            part_path: dir.join(part),
            ranges_path: dir.join(ranges),
            file_bytes,
            sha256,
            name: name.to_string(),
            created: false,
        };
        if let Some(t) = kind_at(&p.final_path).map_err(io_err)? {
            if !t.is_file() {
                return Err((RejectCode::NotRegular, format!("{name} exists and is {}", describe(&t))));
            }
            if !force {
                return Err((RejectCode::Exists, format!("{name} exists (start the receiver with --force to overwrite)")));
            }
        }
        for path in [&p.part_path, &p.ranges_path] {
            if let Some(t) = kind_at(path).map_err(io_err)? {
                if !t.is_file() {
                    return Err((RejectCode::NotRegular, format!("{} is {}", path.display(), describe(&t))));
                }
            }
        }
        p.created = kind_at(&p.part_path).map_err(io_err)?.is_none();
        // O_NOFOLLOW: a symlink planted after the check above still is not followed; O_NONBLOCK:
        // a FIFO planted there does not block the open (it is refused below).
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&p.part_path)
            .map_err(io_err)?;
        let meta = file.metadata().map_err(io_err)?;
        if !meta.file_type().is_file() {
            return Err((RejectCode::NotRegular, format!("{} is {}", p.part_path.display(), describe(&meta.file_type()))));
        }
        // A partial file of another size, or without a sidecar for this very file, holds
        // nothing usable: every byte is sent (and overwritten) again.
        let held = if meta.len() == file_bytes { p.read_sidecar().unwrap_or_default() } else { RangeSet::new() };
        file.set_len(file_bytes).map_err(io_err)?;
        Ok((p, file, held))
    }

    /// The sidecar's ranges if it exists, parses, and describes this file; `None` otherwise.
    fn read_sidecar(&self) -> Option<RangeSet> {
        let f = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(&self.ranges_path).ok();
        let f = f?;
        let meta = f.metadata().ok()?;
        if !meta.is_file() || meta.len() > MAX_SIDECAR_BYTES {
            return None;
        }
        let text = io::read_to_string(f).ok()?;
        let mut lines = text.lines();
        if lines.next()? != SIDECAR_MAGIC {
            return None;
        }
        if lines.next()? != format!("name {}", self.name) {
            return None;
        }
        if lines.next()? != format!("size {}", self.file_bytes) || lines.next()? != format!("sha256 {}", hex(&self.sha256)) {
            return None;
        }
        let mut set = RangeSet::new();
        for (i, line) in lines.enumerate() {
            if i >= MAX_HELD_RANGES {
                return None;
            }
            let (a, b) = line.split_once(' ')?;
            let (a, b): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
            if a >= b || b > self.file_bytes {
                return None;
            }
            set.insert(a, b);
        }
        Some(set)
    }

    /// Record `held` (cut to its [`MAX_HELD_RANGES`] largest ranges) in the sidecar, atomically
    /// (a temporary file renamed over it).
    ///
    /// # Errors
    /// The I/O error.
    pub fn write_sidecar(&self, held: &RangeSet) -> io::Result<()> {
        let held = held.keep_largest(MAX_HELD_RANGES);
        let mut text = format!("{SIDECAR_MAGIC}\nname {}\nsize {}\nsha256 {}\n", self.name, self.file_bytes, hex(&self.sha256));
        for (a, b) in held.ranges() {
            text.push_str(&format!("{a} {b}\n"));
        }
        let tmp = self.ranges_path.with_file_name(format!(".ccarena-tmp-{}", &partial_names(&self.name).0[PART_PREFIX.len()..]));
        {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o644)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
        }
        fs::rename(&tmp, &self.ranges_path)
    }

    /// Move the verified partial file into place and drop the sidecar. Without `force` the move
    /// is a hard link that fails if the name appeared meanwhile (no overwrite); with it, a rename
    /// (which replaces a link rather than writing through it).
    ///
    /// # Errors
    /// The I/O error (the partial file is left in place).
    pub fn finish(&self, force: bool) -> io::Result<()> {
        if force {
            fs::rename(&self.part_path, &self.final_path)?;
        } else {
            fs::hard_link(&self.part_path, &self.final_path)?;
            fs::remove_file(&self.part_path)?;
        }
        let _ = fs::remove_file(&self.ranges_path);
        Ok(())
    }

    /// Remove the partial file and its sidecar (after a failed verification).
    pub fn discard(&self) {
        let _ = fs::remove_file(&self.part_path);
        let _ = fs::remove_file(&self.ranges_path);
    }
}

/// Check that `dir` is a directory this process can create files in.
///
/// # Errors
/// Why not, as one phrase.
pub fn check_dir(dir: &Path) -> Result<PathBuf, String> {
    let canon = dir.canonicalize().map_err(|e| e.to_string())?;
    if !canon.is_dir() {
        return Err("not a directory".into());
    }
    let probe = canon.join(format!(".ccarena-probe-{}", std::process::id()));
    match OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_NOFOLLOW).open(&probe) {
        Ok(_) => {
            let _ = fs::remove_file(&probe);
            Ok(canon)
        }
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Err("not writable (permission denied)".into()),
        Err(e) => Err(format!("not writable ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_leave_the_directory_are_refused() {
        for bad in ["", ".", "..", "../x", "/etc/passwd", "a/b", "a\\b", ".hidden", "a\u{0}b", "a\nb"] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_name(&"x".repeat(256)).is_err());
        assert!(check_name(&"x".repeat(255)).is_ok());
        for good in ["data.bin", "a b", "résumé.pdf", "x..y"] {
            assert!(check_name(good).is_ok(), "{good:?} refused");
        }
    }

    #[test]
    fn partial_names_fit_name_max_and_sidecars_name_their_file() {
        let dir = std::env::temp_dir().join(format!("ccarena-store-long-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let long = "é".repeat(127) + "x"; // 255 bytes
        let (part, ranges) = partial_names(&long);
        assert!(part.len() <= 64 && ranges.len() <= 64, "{part} {ranges}");
        assert_ne!(partial_names("a").0, partial_names("b").0);
        let (p, _f, held) = Placement::open(&dir, &long, 1000, [7; 32], false).unwrap();
        assert!(p.created && held.len_bytes() == 0);
        let mut got = RangeSet::new();
        got.insert(0, 500);
        p.write_sidecar(&got).unwrap();
        // The same file resumes; another size or SHA-256 starts over.
        let (p2, _f, held) = Placement::open(&dir, &long, 1000, [7; 32], false).unwrap();
        assert!(!p2.created);
        assert_eq!(held.len_bytes(), 500);
        assert!(Placement::open(&dir, &long, 1000, [8; 32], false).unwrap().2.len_bytes() == 0);
        assert_eq!(existing_partials(&dir).unwrap(), vec![(p.part_path.clone(), 1000)]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
