#pragma once
// A trace written in part: the reader's error for it, and a check that does not parse.
//
// Whether a plain JSON trace was written to its end. A profiler stopped mid-write (a node killed
// while Kineto exported) leaves a prefix of the file; the prefix's last byte is '}' whenever the
// cut falls just after any event, so the end alone cannot tell. The brackets are counted instead,
// outside strings, over the whole file: the top-level value must close. Streams the bytes (a
// mapped file is scanned in place), about the speed of a read; docs/BENCHMARKS.md.
#include <string>

#include "util/error.h"

namespace ts::trace {

// What read_trace throws when the data ends inside the trace (a plain file whose JSON does not
// close, a gzip stream without its end): a file written in part, or cut while copied. Callers
// that expect such files (a job directory's traces) leave them out; others see a UserError.
class CutOffError : public UserError {
 public:
  using UserError::UserError;
};

// True when `path` (a .json file) ends before its top-level object or array closes, empty
// included. Other damage (a bad token, bytes after the end) is left to the reader's errors, and
// a .json.gz is not inflated here: false for both. Throws ts::UserError when unreadable.
bool json_cut_off(const std::string& path);

}  // namespace ts::trace
