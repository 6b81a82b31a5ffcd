// The progress line of long runs (`sonde analyze`, `sonde convert`) on stderr, shown only when
// stderr is a terminal, from one second into the run (SONDE_PROGRESS_DELAY_MS sets another
// delay), then twice a second, and once more at the end:
//   sonde analyze: 42% of 1.9 GB, 12.3 M records, 3.1 s, about 4 s left
// or, when the inputs' size cannot be known (a pipe):
//   sonde analyze: 12.3 M records, 3.1 s, 4.0 M records/s
// Percentages are of the inputs' bytes as stored (sonde_analyzer_progress(),
// sonde_trace_reader_progress()); the time left assumes the rest goes at the speed so far.
//
// Threads: the line has a thread of its own, which calls `sample` (it must be safe to call
// while the run goes on) and writes stderr; the thread that constructs the line destroys it,
// which ends the line (the last sample, then a newline) before returning.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace sonde::cli {

struct ProgressSample {
    uint64_t done = 0;     // bytes of the inputs consumed
    uint64_t total = 0;    // bytes in all, 0 when unknown
    uint64_t records = 0;  // records read
};

// One line's text (without "\r"), after `seconds` of the run.
std::string progress_text(const char *command, const ProgressSample &s, double seconds);

class ProgressLine {
public:
    // Starts the line's thread when stderr is a terminal; else does nothing.
    ProgressLine(const char *command, std::function<ProgressSample()> sample);
    // Ends the line (the last sample, then a newline) and stops its thread; after this
    // `sample` is not called again. The destructor does it when it was not done.
    void finish();
    ~ProgressLine() { finish(); }
    ProgressLine(const ProgressLine &) = delete;
    ProgressLine &operator=(const ProgressLine &) = delete;

private:
    void loop();
    void print(double seconds);

    const char *command_;
    std::function<ProgressSample()> sample_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    bool printed_ = false;
    size_t width_ = 0;  // of the last line printed, to blank what a shorter one leaves
    std::thread thread_;
};

}  // namespace sonde::cli
