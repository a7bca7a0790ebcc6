//! The Windows calls. Every handle is opened with FILE_OPEN_REPARSE_POINT (the
//! FILE_FLAG_OPEN_REPARSE_POINT of CreateFile), so that a symbolic link, a junction or any
//! other reparse point is opened itself, never followed, and refused where a file or a
//! directory is wanted. A name in a directory is opened relative to the directory's handle
//! (NtCreateFile with OBJECT_ATTRIBUTES.RootDirectory), as openat does. A file's identity
//! is its volume's serial number and its file index (GetFileInformationByHandle).
//!
//! A name is created the same way (NtCreateFile with FILE_CREATE: an entry already there,
//! a link included, is an error), and renamed or removed through a handle to it opened
//! relative to the directory, never following it (NtSetInformationFile:
//! FileRenameInformation(Ex) with the directory's handle as RootDirectory,
//! FileDispositionInformation(Ex); under Wine, SetFileInformationByHandle's FileRenameInfo
//! refused a new name relative to RootDirectory, with ERROR_INVALID_PARAMETER). Modes and
//! owners have no equivalent here: what tc-profile creates has the ACL it inherits from its
//! directory, and the modes asked are not used.

use crate::{DirStatus, Entry, Identity, Kind, Owner};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::windows::ffi::{OsStrExt, OsStringExt};
use std::os::windows::fs::{FileExt, OpenOptionsExt};
use std::os::windows::io::{AsHandle, AsRawHandle, BorrowedHandle, FromRawHandle, OwnedHandle};
use std::path::Path;
use windows_sys::Wdk::Foundation::OBJECT_ATTRIBUTES;
use windows_sys::Wdk::Storage::FileSystem::{
    FileDispositionInformation, FileDispositionInformationEx, FileRenameInformation,
    FileRenameInformationEx, NtCreateFile, NtSetInformationFile, FILE_CREATE, FILE_DIRECTORY_FILE,
    FILE_INFORMATION_CLASS, FILE_NON_DIRECTORY_FILE, FILE_OPEN, FILE_OPEN_IF,
    FILE_OPEN_REPARSE_POINT, FILE_RENAME_POSIX_SEMANTICS, FILE_RENAME_REPLACE_IF_EXISTS,
    FILE_SYNCHRONOUS_IO_NONALERT,
};
use windows_sys::Win32::Foundation::{
    RtlNtStatusToDosError, ERROR_INVALID_FUNCTION, ERROR_INVALID_PARAMETER, ERROR_NOT_SUPPORTED,
    ERROR_NO_MORE_FILES, ERROR_STOPPED_ON_SYMLINK, NTSTATUS, OBJ_CASE_INSENSITIVE, UNICODE_STRING,
};
use windows_sys::Win32::Storage::FileSystem::{
    FileIdBothDirectoryInfo, FileIdBothDirectoryRestartInfo, FlushFileBuffers,
    GetFileInformationByHandle, GetFileInformationByHandleEx, BY_HANDLE_FILE_INFORMATION, DELETE,
    FILE_ADD_FILE, FILE_ATTRIBUTE_DEVICE, FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_REPARSE_POINT,
    FILE_DISPOSITION_FLAG_DELETE, FILE_DISPOSITION_FLAG_IGNORE_READONLY_ATTRIBUTE,
    FILE_DISPOSITION_FLAG_POSIX_SEMANTICS, FILE_DISPOSITION_INFO, FILE_DISPOSITION_INFO_EX,
    FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT, FILE_GENERIC_READ,
    FILE_GENERIC_WRITE, FILE_ID_BOTH_DIR_INFO, FILE_LIST_DIRECTORY, FILE_READ_ATTRIBUTES,
    FILE_RENAME_INFO, FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, FILE_WRITE_DATA,
    SYNCHRONIZE,
};
use windows_sys::Win32::System::IO::IO_STATUS_BLOCK;

/// What a directory is opened for: listing it and reading its attributes.
const DIRECTORY_ACCESS: u32 = FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | SYNCHRONIZE;
/// What a file is opened for to be appended to (O_APPEND): writing at its end only, and
/// its attributes read (to refuse a link).
const APPEND_ACCESS: u32 = (FILE_GENERIC_WRITE & !FILE_WRITE_DATA) | FILE_READ_ATTRIBUTES;
/// What an entry is opened for to be renamed or removed, and looked at first.
const DELETE_ACCESS: u32 = DELETE | FILE_READ_ATTRIBUTES | SYNCHRONIZE;
/// Others may go on reading, writing, renaming and deleting what tc-profile has open, as
/// on unix.
const SHARE_ALL: u32 = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;
/// The bytes of the buffer a directory is listed into, a call at a time.
const LISTING_BYTES: usize = 64 << 10;

/// A directory, open: what is done in it is done by name relative to it.
#[derive(Debug)]
pub struct Dir {
    handle: OwnedHandle,
}

impl Dir {
    /// Opens the directory at `path`. A symbolic link (any reparse point) at its last
    /// component is refused; the components before it are the caller's, and followed.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let file = std::fs::OpenOptions::new()
            .access_mode(DIRECTORY_ACCESS)
            .share_mode(SHARE_ALL)
            .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)
            .open(path)?;
        Dir::checked(OwnedHandle::from(file))
    }

    /// Opens the directory `name` in this one, never through a symbolic link.
    pub fn open_dir(&self, name: &OsStr) -> io::Result<Dir> {
        Dir::checked(self.open_at(name, DIRECTORY_ACCESS, FILE_OPEN, FILE_DIRECTORY_FILE)?)
    }

    /// Opens the existing file `name` for reading, to look at it: never through a
    /// symbolic link (an error: [`is_symbolic_link_refused`]).
    pub fn open_file(&self, name: &OsStr) -> io::Result<File> {
        let handle = self.open_at(name, FILE_GENERIC_READ, FILE_OPEN, FILE_NON_DIRECTORY_FILE)?;
        refuse_reparse_point(&information(handle.as_handle())?)?;
        Ok(File::from(handle))
    }

    /// The entry `name` itself (a symbolic link's own, never followed).
    pub fn entry(&self, name: &OsStr) -> io::Result<Entry> {
        let handle = self.open_at(name, FILE_READ_ATTRIBUTES | SYNCHRONIZE, FILE_OPEN, 0)?;
        Ok(entry_of_information(&information(handle.as_handle())?))
    }

    /// Always `None`: see [`handle`].
    pub fn handle(&self, _name: &OsStr) -> Option<String> {
        None
    }

    /// This directory's identity.
    pub fn identity(&self) -> io::Result<Identity> {
        Ok(identity_of_information(&information(
            self.handle.as_handle(),
        )?))
    }

    /// Windows gives neither an owner's uid and gid nor a time its entries last changed
    /// that can be trusted: NTFS may update a directory's last write time lazily, and under
    /// Wine a listing trusted on it missed a new file (format-spec's merge tests).
    pub fn status(&self) -> io::Result<DirStatus> {
        Ok(DirStatus {
            owner: None,
            changed: None,
        })
    }

    /// Hands each name in this directory (but `.` and `..`) to `visit`, read through the
    /// open directory itself.
    pub fn list(&self, visit: &mut dyn FnMut(&OsStr)) -> io::Result<()> {
        // A handle of its own (the directory itself, reopened relative to this one): Wine
        // lists a handle's directory once, and a restart goes back over that listing
        // without the entries come since.
        let directory =
            self.open_relative(&[], DIRECTORY_ACCESS, FILE_OPEN, FILE_DIRECTORY_FILE)?;
        // u64s: the records are 8-byte aligned.
        let mut buffer = vec![0u64; LISTING_BYTES / 8];
        let mut class = FileIdBothDirectoryRestartInfo;
        loop {
            // SAFETY: the buffer is LISTING_BYTES long, writable and aligned for the records.
            let listed = unsafe {
                GetFileInformationByHandleEx(
                    directory.as_raw_handle(),
                    class,
                    buffer.as_mut_ptr().cast(),
                    LISTING_BYTES as u32,
                )
            };
            if listed == 0 {
                let error = io::Error::last_os_error();
                if error.raw_os_error() == Some(ERROR_NO_MORE_FILES as i32) {
                    return Ok(());
                }
                return Err(error);
            }
            class = FileIdBothDirectoryInfo;
            let mut offset = 0;
            loop {
                // SAFETY: the system wrote a record at each offset it gave, its name's
                // FileNameLength bytes at its end, all within the buffer.
                let (name, next) = unsafe {
                    let record = buffer.as_ptr().cast::<u8>().add(offset);
                    let record = record.cast::<FILE_ID_BOTH_DIR_INFO>();
                    let name = std::slice::from_raw_parts(
                        std::ptr::addr_of!((*record).FileName).cast::<u16>(),
                        (*record).FileNameLength as usize / 2,
                    );
                    (OsString::from_wide(name), (*record).NextEntryOffset)
                };
                if name != "." && name != ".." {
                    visit(&name);
                }
                if next == 0 {
                    break;
                }
                offset += next as usize;
            }
        }
    }

    /// This directory, opened anew.
    pub(crate) fn reopen(&self) -> io::Result<Dir> {
        Dir::checked(self.open_relative(&[], DIRECTORY_ACCESS, FILE_OPEN, FILE_DIRECTORY_FILE)?)
    }

    /// Creates the directory `name` (it must not exist), and opens it. It has the ACL it
    /// inherits: `_mode` has no equivalent here.
    pub fn create_dir(&self, name: &OsStr, _mode: u32) -> io::Result<Dir> {
        let handle = self.open_at(name, DIRECTORY_ACCESS, FILE_CREATE, FILE_DIRECTORY_FILE)?;
        Ok(Dir { handle })
    }

    /// Creates the file `name`, which must not exist (not even as a symbolic link); open
    /// for reading and appending. It has the ACL it inherits: `_mode` has no equivalent.
    pub fn create_new(&self, name: &OsStr, _mode: u32) -> io::Result<File> {
        let access = FILE_GENERIC_READ | APPEND_ACCESS;
        let handle = self.open_at(name, access, FILE_CREATE, FILE_NON_DIRECTORY_FILE)?;
        Ok(File::from(handle))
    }

    /// Opens the file `name` for appending, created if missing, never through a symbolic
    /// link (an error). A file created has the ACL it inherits: `_mode` has no equivalent.
    pub fn open_append(&self, name: &OsStr, _mode: u32) -> io::Result<File> {
        let handle = self.open_at(name, APPEND_ACCESS, FILE_OPEN_IF, FILE_NON_DIRECTORY_FILE)?;
        refuse_reparse_point(&information(handle.as_handle())?)?;
        Ok(File::from(handle))
    }

    /// Renames `from` to `to`, both in this directory; `to` is replaced (a symbolic link
    /// there itself, never what it points to), even while it is open elsewhere where the
    /// file system allows it (POSIX semantics: NTFS since Windows 10 1709).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let moved = self.open_at(from, DELETE_ACCESS, FILE_OPEN, 0)?;
        let to = single_name(to)?;
        // The structure, then the name's UTF-16 and a NUL; u64s, for its alignment.
        let name_at = std::mem::offset_of!(FILE_RENAME_INFO, FileName);
        let bytes = name_at + 2 * to.len() + 2;
        let mut buffer = vec![0u64; bytes.div_ceil(8)];
        let info = buffer.as_mut_ptr().cast::<FILE_RENAME_INFO>();
        // SAFETY: the buffer is zeroed, aligned and long enough for the structure and the
        // name after it.
        unsafe {
            (*info).Anonymous.Flags = FILE_RENAME_REPLACE_IF_EXISTS | FILE_RENAME_POSIX_SEMANTICS;
            (*info).RootDirectory = self.handle.as_raw_handle();
            (*info).FileNameLength = (2 * to.len()) as u32;
            let name = buffer.as_mut_ptr().cast::<u8>().add(name_at).cast::<u16>();
            std::ptr::copy_nonoverlapping(to.as_ptr(), name, to.len());
        }
        let set = |class| {
            // SAFETY: the buffer holds a FILE_RENAME_INFO of `bytes` bytes.
            unsafe { set_information(moved.as_handle(), class, buffer.as_ptr().cast(), bytes) }
        };
        match set(FileRenameInformationEx) {
            Err(error) if is_unsupported(&error) => {
                // SAFETY: as above; the union's other field, for the older class.
                unsafe {
                    (*info).Anonymous.Flags = 0;
                    (*info).Anonymous.ReplaceIfExists = true;
                }
                set(FileRenameInformation)
            }
            result => result,
        }
    }

    /// Removes the entry `name`, a file or a symbolic link (never followed); a directory is
    /// refused.
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        let removed = self.open_at(name, DELETE_ACCESS, FILE_OPEN, 0)?;
        let attributes = information(removed.as_handle())?.dwFileAttributes;
        if attributes & FILE_ATTRIBUTE_DIRECTORY != 0
            && attributes & FILE_ATTRIBUTE_REPARSE_POINT == 0
        {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "a directory, not removed as a file",
            ));
        }
        delete(removed.as_handle())
    }

    /// Removes the empty directory `name` (a symbolic link there is refused).
    pub(crate) fn remove_empty_dir(&self, name: &OsStr) -> io::Result<()> {
        let removed = self.open_at(name, DELETE_ACCESS, FILE_OPEN, FILE_DIRECTORY_FILE)?;
        refuse_reparse_point(&information(removed.as_handle())?)?;
        delete(removed.as_handle())
    }

    /// Makes this directory's entries durable: created, renamed and removed ones.
    pub fn sync(&self) -> io::Result<()> {
        // FlushFileBuffers wants a handle that may write: the directory reopened so.
        let dir = self.open_relative(
            &[],
            FILE_ADD_FILE | SYNCHRONIZE,
            FILE_OPEN,
            FILE_DIRECTORY_FILE,
        )?;
        // SAFETY: the handle is open.
        if unsafe { FlushFileBuffers(dir.as_raw_handle()) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Does nothing: Windows has no modes; the directory keeps the ACL it inherited.
    pub fn set_mode(&self, _mode: u32) -> io::Result<()> {
        Ok(())
    }

    /// Refused: a uid and a gid name nobody on Windows.
    pub fn give_to(&self, _owner: Owner) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "Windows has no uid and gid to give a directory to",
        ))
    }

    /// Opens (or creates, by `disposition`) `name` relative to this directory: `name`
    /// itself, a reparse point included, never what it points to.
    fn open_at(
        &self,
        name: &OsStr,
        access: u32,
        disposition: u32,
        options: u32,
    ) -> io::Result<OwnedHandle> {
        self.open_relative(&single_name(name)?, access, disposition, options)
    }

    /// Opens (or creates) `wide` relative to this directory, never following a reparse
    /// point at it; an empty name is the directory itself.
    fn open_relative(
        &self,
        wide: &[u16],
        access: u32,
        disposition: u32,
        options: u32,
    ) -> io::Result<OwnedHandle> {
        let bytes = u16::try_from(wide.len() * 2)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name too long"))?;
        let object_name = UNICODE_STRING {
            Length: bytes,
            MaximumLength: bytes,
            Buffer: wide.as_ptr().cast_mut(),
        };
        let attributes = OBJECT_ATTRIBUTES {
            Length: std::mem::size_of::<OBJECT_ATTRIBUTES>() as u32,
            RootDirectory: self.handle.as_raw_handle(),
            ObjectName: &object_name,
            // As Windows' own calls open names.
            Attributes: OBJ_CASE_INSENSITIVE,
            SecurityDescriptor: std::ptr::null(),
            SecurityQualityOfService: std::ptr::null(),
        };
        let mut handle = std::ptr::null_mut();
        // SAFETY: every pointer is to a live, initialised value of the type the call takes.
        let status = unsafe {
            let mut status_block: IO_STATUS_BLOCK = std::mem::zeroed();
            NtCreateFile(
                &mut handle,
                access,
                &attributes,
                &mut status_block,
                std::ptr::null(),
                0,
                SHARE_ALL,
                disposition,
                options | FILE_OPEN_REPARSE_POINT | FILE_SYNCHRONOUS_IO_NONALERT,
                std::ptr::null(),
                0,
            )
        };
        nt_result(status)?;
        // SAFETY: the call succeeded: the handle is open, and ours.
        Ok(unsafe { OwnedHandle::from_raw_handle(handle) })
    }

    /// The directory open at `handle`, refused when it is a reparse point or no directory.
    fn checked(handle: OwnedHandle) -> io::Result<Dir> {
        let info = information(handle.as_handle())?;
        if info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a symbolic link, not followed: give the directory itself",
            ));
        }
        if info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY == 0 {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                "not a directory",
            ));
        }
        Ok(Dir { handle })
    }
}

/// The identity of an open file.
pub fn identity(file: &File) -> io::Result<Identity> {
    Ok(identity_of_information(&information(file.as_handle())?))
}

/// The identity of the file or directory at `path`, a symbolic link followed (as
/// `std::fs::metadata` does): which file a name given by the user leads to.
pub fn identity_of_path(path: &Path) -> io::Result<Identity> {
    let file = std::fs::OpenOptions::new()
        .access_mode(FILE_READ_ATTRIBUTES)
        .share_mode(SHARE_ALL)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)?;
    identity(&file)
}

/// What an open file is.
pub fn entry_of(file: &File) -> io::Result<Entry> {
    Ok(entry_of_information(&information(file.as_handle())?))
}

/// Always `None`: an NTFS file index carries a sequence number that changes when the index
/// is given to another file, so the identity alone tells a file from a later one.
pub fn handle(_file: &File) -> Option<String> {
    None
}

/// Opens the file at `path` to read it as [`Dir::open_file`] does: a symbolic link at its
/// last component is refused; the components before it are the caller's, and followed.
pub fn open_file(path: &Path) -> io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .share_mode(SHARE_ALL)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)?;
    refuse_reparse_point(&information(file.as_handle())?)?;
    Ok(file)
}

/// Whether `error` is the refusal to open a symbolic link.
pub fn is_symbolic_link_refused(error: &io::Error) -> bool {
    error.raw_os_error() == Some(ERROR_STOPPED_ON_SYMLINK as i32)
}

/// Reads from `offset`. (Windows moves the file's position; nothing here uses it.)
pub fn read_at(file: &File, buffer: &mut [u8], offset: u64) -> io::Result<usize> {
    file.seek_read(buffer, offset)
}

/// A name within one directory: one component, neither `.` nor `..`, so that it cannot
/// lead out of the directory; as UTF-16.
fn single_name(name: &OsStr) -> io::Result<Vec<u16>> {
    let wide: Vec<u16> = name.encode_wide().collect();
    let separator = |unit: &u16| *unit == u16::from(b'\\') || *unit == u16::from(b'/');
    if wide.is_empty() || name == "." || name == ".." || wide.iter().any(separator) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a name within the directory",
        ));
    }
    Ok(wide)
}

/// Deletes the open `handle`'s entry: its name gone at once where the file system allows it
/// (POSIX semantics), else when the last handle to it is closed.
fn delete(handle: BorrowedHandle<'_>) -> io::Result<()> {
    let posix = FILE_DISPOSITION_INFO_EX {
        Flags: FILE_DISPOSITION_FLAG_DELETE
            | FILE_DISPOSITION_FLAG_POSIX_SEMANTICS
            | FILE_DISPOSITION_FLAG_IGNORE_READONLY_ATTRIBUTE,
    };
    let classic = FILE_DISPOSITION_INFO { DeleteFile: true };
    // SAFETY: each pointer is to a live structure of the class given, of the size given.
    unsafe {
        match set_information(
            handle,
            FileDispositionInformationEx,
            std::ptr::addr_of!(posix).cast(),
            std::mem::size_of_val(&posix),
        ) {
            Err(error) if is_unsupported(&error) => set_information(
                handle,
                FileDispositionInformation,
                std::ptr::addr_of!(classic).cast(),
                std::mem::size_of_val(&classic),
            ),
            result => result,
        }
    }
}

/// NtSetInformationFile. (Win32's FILE_RENAME_INFO and FILE_DISPOSITION_INFO(_EX) are
/// laid out as the NT structures.)
///
/// # Safety
/// `info` points to `bytes` bytes of the structure that `class` takes.
unsafe fn set_information(
    handle: BorrowedHandle<'_>,
    class: FILE_INFORMATION_CLASS,
    info: *const std::ffi::c_void,
    bytes: usize,
) -> io::Result<()> {
    let bytes = u32::try_from(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name too long"))?;
    // SAFETY: the caller's; the status block is a valid out-parameter.
    let status = unsafe {
        let mut status_block: IO_STATUS_BLOCK = std::mem::zeroed();
        NtSetInformationFile(
            handle.as_raw_handle(),
            &mut status_block,
            info,
            bytes,
            class,
        )
    };
    nt_result(status)
}

/// An NTSTATUS as the Win32 error that the Win32 calls would have given.
fn nt_result(status: NTSTATUS) -> io::Result<()> {
    if status < 0 {
        // SAFETY: a pure translation of a status code.
        let code = unsafe { RtlNtStatusToDosError(status) };
        return Err(io::Error::from_raw_os_error(code as i32));
    }
    Ok(())
}

/// Whether `error` says that the system or the file system lacks a class of information
/// (an older Windows, FAT, Wine): the older class is used instead.
fn is_unsupported(error: &io::Error) -> bool {
    [
        ERROR_INVALID_PARAMETER,
        ERROR_INVALID_FUNCTION,
        ERROR_NOT_SUPPORTED,
    ]
    .iter()
    .any(|&code| error.raw_os_error() == Some(code as i32))
}

fn refuse_reparse_point(info: &BY_HANDLE_FILE_INFORMATION) -> io::Result<()> {
    match info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT {
        0 => Ok(()),
        _ => Err(io::Error::from_raw_os_error(
            ERROR_STOPPED_ON_SYMLINK as i32,
        )),
    }
}

fn information(handle: BorrowedHandle<'_>) -> io::Result<BY_HANDLE_FILE_INFORMATION> {
    // SAFETY: a zeroed structure is a valid out-parameter; the handle is open.
    unsafe {
        let mut info: BY_HANDLE_FILE_INFORMATION = std::mem::zeroed();
        if GetFileInformationByHandle(handle.as_raw_handle(), &mut info) == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(info)
    }
}

fn entry_of_information(info: &BY_HANDLE_FILE_INFORMATION) -> Entry {
    let attributes = info.dwFileAttributes;
    let kind = if attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        Kind::SymbolicLink
    } else if attributes & FILE_ATTRIBUTE_DIRECTORY != 0 {
        Kind::Directory
    } else if attributes & FILE_ATTRIBUTE_DEVICE != 0 {
        Kind::Other
    } else {
        Kind::File
    };
    Entry {
        identity: identity_of_information(info),
        kind,
        size: (u64::from(info.nFileSizeHigh) << 32) | u64::from(info.nFileSizeLow),
        links: u64::from(info.nNumberOfLinks),
    }
}

fn identity_of_information(info: &BY_HANDLE_FILE_INFORMATION) -> Identity {
    Identity {
        device: u64::from(info.dwVolumeSerialNumber),
        inode: (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow),
    }
}
