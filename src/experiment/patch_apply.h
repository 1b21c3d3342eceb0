#pragma once
// verify --patch's mechanics: the agent's patcher run on a spec (patch_plan.h), the project copied
// to a folder of verify's own (never the user's files), and the diff applied there with
// `patch -p1` (or `git apply` where patch is missing), as the user would.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ts::experiment {

struct PatcherEdit {
  std::string fix, file, what;
  int64_t line = 0;
};

struct PatcherOutput {
  std::vector<std::string> files;    // relative paths the diff changes
  std::vector<PatcherEdit> edits;
  std::vector<std::string> refused;  // one line per site: "data.py:22: read-only: ..."
  std::string problem;               // the patcher did not run or answer ("" when it did)
};

// Runs `python -m trainscope_agent.patch SPEC` (PYTHONPATH = the agent folder); the diff goes to
// the spec's "out" file as bytes.
PatcherOutput run_patcher(const std::string& python, const std::string& agent_dir, const std::string& spec_path);

// Copies the project folder `from` to `to` (created), leaving out the paths in `skip` (verify's
// own output, trainscope-runs/, .git/): symlinks stay links. "" when copied, else why not (a
// folder of more than kMaxCopyBytes is not copied: the patch is written, not measured).
std::string copy_project(const std::filesystem::path& from, const std::filesystem::path& to,
                         const std::vector<std::filesystem::path>& skip);
inline constexpr uintmax_t kMaxCopyBytes = uintmax_t{1} << 30;

// Beside the copy at `to`, a symlink to each sibling of `from` (the other entries of its parent
// folder, but `from` itself and the names in `reserved`), so that a script's `../data` in the copy
// reads the files the original's does (pytorch/examples open '../data'). Nothing for a parent of
// "/" or of more than kMaxSiblingLinks entries; the links that could not be made are left out.
// Returns how many were made.
int link_siblings(const std::filesystem::path& from, const std::filesystem::path& to,
                  const std::vector<std::string>& reserved);
inline constexpr int kMaxSiblingLinks = 1000;

// Where the copy of the project folder `from` goes under `root`: root/<the names of from's
// `levels` - 1 nearest ancestors>/<from's name> (root/lt/ex/basics for /work/lt/ex/basics and 3
// levels), fewer where `from` is nearer "/". With link_ancestors, a path that climbs out of the project
// (lightning's examples read `../../Datasets`) reads the original's files, and one that climbs back
// in (`../basics/x`) reads the copy, as the names are the original's.
std::filesystem::path mirrored_copy_path(const std::filesystem::path& from, const std::filesystem::path& root,
                                         int levels);
// link_siblings at each of the copy's `levels` ancestors up to mirrored_copy_path's root: the
// entries of from's k-th parent beside the copy's, never a `.git`. Returns how many links were made.
int link_ancestors(const std::filesystem::path& from, const std::filesystem::path& copy, int levels);
inline constexpr int kMirroredLevels = 3;

// Applies `diff` (a file) in `dir` with -p1; "" when it applied, else the tool's complaint.
std::string apply_patch(const std::string& dir, const std::string& diff);

// The command for a run in the copy: arguments naming paths under `from` name the same paths
// under `to` (relative ones stay: the copy is the working directory).
std::vector<std::string> command_in_copy(const std::vector<std::string>& command, const std::string& from,
                                         const std::string& to);

}  // namespace ts::experiment
