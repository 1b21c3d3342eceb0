#pragma once
// Directories only this user may touch, for files other users must not redirect or forge (the live
// status hand-off between `trainscope run` and `serve` under a shared /tmp). A directory counts as
// private when lstat shows a real directory (not a symlink) owned by our effective uid with no group
// or other permission bits.
#include <string>

namespace ts {

// Creates every component of `dir` below `trusted_base` (mkdir 0700) and checks each with lstat;
// a component of ours with group/other access is closed to 0700 first. Returns "" when `dir` is
// private, else one sentence saying which component is wrong and why (another owner, a symlink,
// not a directory).
std::string make_private_dir(const std::string& dir, const std::string& trusted_base);

// The check alone, on `dir` only: "" when private, else the reason ("does not exist" included).
std::string private_dir_problem(const std::string& dir);

// Writes `text` to `path` atomically inside a private directory: a temporary opened with
// O_CREAT|O_EXCL|O_NOFOLLOW (mode 0600) next to it, then rename(2). False on any error.
bool write_file_atomically(const std::string& path, const std::string& text);

// The same for a file others read (a job directory on a shared file system: every node's manifest,
// read back by whoever runs `trainscope report DIR`): mode `mode`, and the data is flushed to the
// file (fsync) before the rename, so a node that dies (or loses its power) leaves the previous
// complete version or the new one, never a cut-off file. A temporary left by a writer that died
// mid-write is replaced. False on any error.
bool write_shared_file_atomically(const std::string& path, const std::string& text, unsigned mode = 0644);

}  // namespace ts
