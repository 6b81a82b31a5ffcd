// Output files of `sonde report` and `sonde export`: written to a temporary file in the same
// directory and renamed over the target only when complete, so that a failed or interrupted
// run never leaves a truncated file under the requested name. "-" writes to stdout.
#pragma once

#include <fstream>
#include <ostream>
#include <string>

class OutputFile {
public:
    OutputFile() = default;
    ~OutputFile();  // removes the temporary file unless commit() succeeded
    OutputFile(const OutputFile &) = delete;
    OutputFile &operator=(const OutputFile &) = delete;

    // Creates the temporary file for `path` (or selects stdout for "-"). Unless `overwrite`, an
    // existing `path` is refused. False with `*error` set on failure.
    bool open(const std::string &path, bool overwrite, std::string *error);
    std::ostream &stream();
    // Flushes, closes and renames the temporary file to the target. False with `*error` set.
    bool commit(std::string *error);

private:
    std::string path_;
    std::string temp_;
    std::ofstream file_;
    bool stdout_ = false;
    bool committed_ = false;
};
