// Reading the Python reference's tb_data files in the C-simulation testbenches (tb/*_test.cpp,
// tb/*_axi_test.cpp): one reader and one state check, so both testbenches refuse the same bad
// files and report mismatches the same way. Testbench-only: not included by the firmware.
#ifndef CODESIGN_TESTBENCH_IO_H_
#define CODESIGN_TESTBENCH_IO_H_

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace codesign {
namespace tb {

const int kMaxReported = 10;  // mismatches printed in full; the rest are only counted

// The next line of f that is not empty and not a '#' comment.
inline bool next_data_line(std::ifstream& f, std::string& line) {
  while (std::getline(f, line)) {
    if (!line.empty() && line[0] != '#') return true;
  }
  return false;
}

// A missing or malformed data file: the summary line's error form, exit status 2.
inline void fail_input(const std::string& what) {
  std::printf("csim: error: %s\n", what.c_str());
  std::exit(2);
}

// The stimulus is used up: the expected predictions must be too.
inline void check_no_more_predictions(std::ifstream& predictions) {
  std::string line;
  if (next_data_line(predictions, line)) fail_input("expected_predictions.txt has more lines than the stimulus");
}

// The learner state after the stream against expected_state.txt (one "name raw" pair per line);
// prints the first mismatches as "(who)" against the reference, counts the values and mismatches.
inline void check_state(std::ifstream& state_file, const std::vector<long long>& state, const char* who,
                        long& state_values, long& state_mismatches) {
  const long n_state = (long)state.size();
  std::string line;
  state_values = 0;
  state_mismatches = 0;
  while (next_data_line(state_file, line)) {
    std::istringstream in(line);
    std::string name;
    long long want;
    if (!(in >> name >> want)) fail_input("bad expected state line: " + line);
    if (state_values >= n_state) fail_input("expected_state.txt has more values than the learner state");
    const long long got = state[state_values];
    if (got != want) {
      if (state_mismatches < kMaxReported) {
        std::printf("mismatch: final %s = %lld (%s), %lld (reference)\n", name.c_str(), got, who, want);
      }
      state_mismatches++;
    }
    state_values++;
  }
  if (state_values != n_state) fail_input("expected_state.txt has fewer values than the learner state");
}

}  // namespace tb
}  // namespace codesign

#endif  // CODESIGN_TESTBENCH_IO_H_
