// Private directories and atomic writes (util/private_dir.h): the live-status hand-off relies on
// them so another user on the host cannot redirect our writes or plant files for serve.
#include "util/private_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <gtest/gtest.h>

namespace fs = std::filesystem;

namespace {
std::string temp_base() {
  char tmpl[] = "/tmp/ts_private_XXXXXX";
  return mkdtemp(tmpl);  // 0700, ours: the trusted base of each test
}
std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
mode_t mode_of(const std::string& p) {
  struct stat st;
  lstat(p.c_str(), &st);
  return st.st_mode & 07777;
}
}  // namespace

TEST(PrivateDir, CreatesEveryComponent0700) {
  std::string base = temp_base();
  ::umask(022);
  EXPECT_EQ(ts::make_private_dir(base + "/trainscope-1/live", base), "");
  EXPECT_EQ(mode_of(base + "/trainscope-1"), 0700u);
  EXPECT_EQ(mode_of(base + "/trainscope-1/live"), 0700u);
  EXPECT_EQ(ts::make_private_dir(base + "/trainscope-1/live", base), "");  // existing and ours: fine
  fs::remove_all(base);
}

TEST(PrivateDir, ClosesALooseFolderOfOursButTheCheckAloneRefusesIt) {
  std::string base = temp_base();
  fs::create_directory(base + "/open");
  chmod((base + "/open").c_str(), 0755);  // what create_directories left under the umask before
  EXPECT_NE(ts::private_dir_problem(base + "/open").find("has mode 0755"), std::string::npos);
  EXPECT_EQ(ts::make_private_dir(base + "/open/live", base), "");
  EXPECT_EQ(mode_of(base + "/open"), 0700u);
  EXPECT_EQ(mode_of(base + "/open/live"), 0700u);
  fs::remove_all(base);
}

TEST(PrivateDir, RefusesSymlinksAndFiles) {
  std::string base = temp_base();
  std::string why;
  fs::create_directory(base + "/elsewhere");
  fs::create_directory_symlink(base + "/elsewhere", base + "/link");
  why = ts::make_private_dir(base + "/link/live", base);
  EXPECT_NE(why.find("is a symbolic link"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(base + "/elsewhere/live"));

  std::ofstream(base + "/file") << "x";
  why = ts::make_private_dir(base + "/file", base);
  EXPECT_NE(why.find("is not a directory"), std::string::npos) << why;

  EXPECT_NE(ts::make_private_dir("/etc/x", base).find("not below"), std::string::npos);
  EXPECT_NE(ts::private_dir_problem(base + "/missing").find("No such file"), std::string::npos);
  fs::remove_all(base);
}

TEST(PrivateDir, RefusesAnotherOwner) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a directory owned by another uid";
  std::string base = temp_base();
  fs::create_directory(base + "/theirs");
  chmod((base + "/theirs").c_str(), 0700);
  ASSERT_EQ(chown((base + "/theirs").c_str(), 12345, 12345), 0);
  std::string why = ts::private_dir_problem(base + "/theirs");
  EXPECT_NE(why.find("owned by uid 12345"), std::string::npos) << why;
  why = ts::make_private_dir(base + "/theirs/live", base);  // never adopted, whatever its mode
  EXPECT_NE(why.find("owned by uid 12345"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(base + "/theirs/live"));  // nothing created below a bad component
  fs::remove_all(base);
}

TEST(PrivateDir, AtomicWriteNeverFollowsALink) {
  std::string base = temp_base();
  std::ofstream(base + "/victim") << "keep";
  // A planted temporary that points elsewhere is replaced, not written through.
  fs::create_symlink(base + "/victim", base + "/.status.json.tmp");
  ASSERT_TRUE(ts::write_file_atomically(base + "/status.json", "{\"a\":1}"));
  EXPECT_EQ(slurp(base + "/status.json"), "{\"a\":1}");
  EXPECT_EQ(slurp(base + "/victim"), "keep");
  EXPECT_FALSE(fs::exists(base + "/.status.json.tmp"));
  EXPECT_EQ(mode_of(base + "/status.json"), 0600u);
  // The target itself a symlink: rename replaces the link, the file it named stays.
  fs::create_symlink(base + "/victim", base + "/other.json");
  ASSERT_TRUE(ts::write_file_atomically(base + "/other.json", "new"));
  EXPECT_FALSE(fs::is_symlink(base + "/other.json"));
  EXPECT_EQ(slurp(base + "/victim"), "keep");
  EXPECT_FALSE(ts::write_file_atomically(base + "/no-such-dir/x.json", "x"));
  fs::remove_all(base);
}
