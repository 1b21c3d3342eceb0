#include "util/private_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

namespace ts {
namespace fs = std::filesystem;

std::string private_dir_problem(const std::string& dir) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return fmt::format("{}: {}", dir, std::strerror(errno));
  if (S_ISLNK(st.st_mode)) return dir + ": is a symbolic link, not a directory of ours";
  if (!S_ISDIR(st.st_mode)) return dir + ": is not a directory";
  if (st.st_uid != ::geteuid())
    return fmt::format("{}: is owned by uid {}, not by us (uid {})", dir, st.st_uid, ::geteuid());
  if ((st.st_mode & 077) != 0)
    return fmt::format("{}: has mode {:04o}; only its owner may have access (0700)", dir, st.st_mode & 07777);
  return "";
}

std::string make_private_dir(const std::string& dir, const std::string& trusted_base) {
  fs::path base = fs::path(trusted_base).lexically_normal();
  fs::path rel = fs::path(dir).lexically_normal().lexically_relative(base);
  if (rel.empty() || *rel.begin() == "..")
    return fmt::format("{}: not below {}", dir, trusted_base);
  fs::path cur = base;
  for (const auto& part : rel) {
    if (part == "." || part.empty()) continue;
    cur /= part;
    // mkdir never follows a symlink at its last component; an existing one is caught by lstat below.
    if (::mkdir(cur.c_str(), 0700) != 0 && errno != EEXIST)
      return fmt::format("{}: cannot create it: {}", cur.string(), std::strerror(errno));
    // A folder of ours with group/other access (earlier versions made /tmp/trainscope-<uid> with
    // the umask's 0755) is closed to 0700 through a descriptor that cannot be a symlink; one of
    // someone else's, a symlink or a file stays refused below.
    int fd = ::open(cur.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      struct stat st;
      if (::fstat(fd, &st) == 0 && st.st_uid == ::geteuid() && (st.st_mode & 077) != 0) ::fchmod(fd, 0700);
      ::close(fd);
    }
    if (std::string p = private_dir_problem(cur.string()); !p.empty()) return p;
  }
  return "";
}

namespace {
bool write_atomically(const std::string& path, const std::string& text, unsigned mode, bool sync) {
  fs::path p(path);
  std::string tmp = (p.parent_path() / ("." + p.filename().string() + ".tmp")).string();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0 && errno == EEXIST) {  // left by a writer that died mid-write: ours, in our own dir
    ::unlink(tmp.c_str());
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  }
  if (fd < 0) return false;
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  bool ok = done == text.size() && (!sync || ::fsync(fd) == 0);
  ok = ::close(fd) == 0 && ok;
  if (ok && ::rename(tmp.c_str(), path.c_str()) == 0) return true;
  ::unlink(tmp.c_str());
  return false;
}
}  // namespace

bool write_file_atomically(const std::string& path, const std::string& text) {
  return write_atomically(path, text, 0600, false);
}

bool write_shared_file_atomically(const std::string& path, const std::string& text, unsigned mode) {
  return write_atomically(path, text, mode, true);
}

}  // namespace ts
