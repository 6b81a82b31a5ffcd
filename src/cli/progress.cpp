// The progress line of long runs (progress.h).
#include "cli/progress.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace sonde::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::string fixed(double v, int decimals) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, v);
    return text;
}

std::string bytes_text(uint64_t b) {
    const double v = static_cast<double>(b);
    if (v >= 1e9) return fixed(v / 1e9, 1) + " GB";
    if (v >= 1e6) return fixed(v / 1e6, 1) + " MB";
    if (v >= 1e3) return fixed(v / 1e3, 1) + " kB";
    return std::to_string(b) + " B";
}

std::string seconds_text(double s) {
    if (s < 60) return fixed(s, s < 10 ? 1 : 0) + " s";
    const long long whole = static_cast<long long>(s + 0.5);
    if (whole < 3600) return std::to_string(whole / 60) + " min " + std::to_string(whole % 60) + " s";
    return std::to_string(whole / 3600) + " h " + std::to_string(whole % 3600 / 60) + " min";
}

std::chrono::milliseconds first_delay() {
    const char *env = std::getenv("SONDE_PROGRESS_DELAY_MS");
    if (env != nullptr && *env != '\0') {
        char *end = nullptr;
        const unsigned long long ms = std::strtoull(env, &end, 10);
        if (*end == '\0' && ms <= 24ull * 3600 * 1000) return std::chrono::milliseconds(ms);
    }
    return std::chrono::milliseconds(1000);
}

}  // namespace

std::string progress_text(const char *command, const ProgressSample &s, double seconds) {
    const std::string records = fixed(static_cast<double>(s.records) / 1e6, 1) + " M records";
    std::string text = std::string(command) + ": ";
    if (s.total == 0)
        return text + records + ", " + seconds_text(seconds) + ", " +
               fixed(seconds > 0 ? static_cast<double>(s.records) / 1e6 / seconds : 0.0, 1) + " M records/s";
    const uint64_t done = s.done < s.total ? s.done : s.total;
    const double fraction = static_cast<double>(done) / static_cast<double>(s.total);
    text += std::to_string(static_cast<int>(fraction * 100)) + "% of " + bytes_text(s.total) + ", " +
            records + ", " + seconds_text(seconds);
    if (done == s.total) return text;
    if (fraction < 0.01 || seconds < 0.5) return text + ", time left not known yet";
    return text + ", about " + seconds_text(seconds * (1 - fraction) / fraction) + " left";
}

ProgressLine::ProgressLine(const char *command, std::function<ProgressSample()> sample)
    : command_(command), sample_(std::move(sample)) {
    if (isatty(STDERR_FILENO)) thread_ = std::thread([this] { loop(); });
}

void ProgressLine::finish() {
    if (!thread_.joinable()) return;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        done_ = true;
    }
    cv_.notify_one();
    thread_.join();
}

void ProgressLine::print(double seconds) {
    const std::string text = progress_text(command_, sample_(), seconds);
    const size_t pad = width_ > text.size() ? width_ - text.size() : 0;
    std::fprintf(stderr, "\r%s%*s", text.c_str(), static_cast<int>(pad), "");
    std::fflush(stderr);
    width_ = text.size();
    printed_ = true;
}

void ProgressLine::loop() {
    const Clock::time_point start = Clock::now();
    auto elapsed = [&start] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_for(lock, first_delay(), [this] { return done_; })) {
        do print(elapsed());
        while (!cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return done_; }));
    }
    if (printed_) {  // the final figures, then the line ends
        print(elapsed());
        std::fprintf(stderr, "\n");
        std::fflush(stderr);
    }
}

}  // namespace sonde::cli
