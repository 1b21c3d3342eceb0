#pragma once
// A command as a POSIX shell would take it back: the user's own command line, quoted where needed,
// inside a fix they can paste (an environment prefix before it, for instance).
#include <string>
#include <vector>

namespace ts {

// One word: as it is when every character is safe in a shell word, else in single quotes (a quote
// inside as '\'' ); an empty word is ''.
std::string shell_quote(const std::string& word);

// The words quoted and joined by spaces.
std::string shell_join(const std::vector<std::string>& words);

}  // namespace ts
