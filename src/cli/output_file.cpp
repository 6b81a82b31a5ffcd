// Output files written through a temporary file (see output_file.h).
#include "cli/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <vector>

OutputFile::~OutputFile() {
    if (file_.is_open()) file_.close();
    if (!temp_.empty() && !committed_) unlink(temp_.c_str());
}

bool OutputFile::open(const std::string &path, bool overwrite, std::string *error) {
    path_ = path;
    if (path == "-") {
        stdout_ = true;
        return true;
    }
    struct stat st;
    if (!overwrite && lstat(path.c_str(), &st) == 0) {
        *error = path + ": exists (use --force to overwrite it)";
        return false;
    }
    std::vector<char> name(path.begin(), path.end());
    const char suffix[] = ".tmp-XXXXXX";
    name.insert(name.end(), suffix, suffix + sizeof suffix);
    const int fd = mkstemp(name.data());
    if (fd < 0) {
        *error = path + ": cannot create a temporary file beside it: " + std::strerror(errno);
        return false;
    }
    temp_ = name.data();
    // mkstemp makes the file private (0600); give it the mode a plain creation would have.
    const mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    close(fd);
    file_.open(temp_, std::ios::binary | std::ios::trunc);
    if (!file_) {
        *error = temp_ + ": cannot open for writing";
        return false;
    }
    return true;
}

std::ostream &OutputFile::stream() { return stdout_ ? std::cout : static_cast<std::ostream &>(file_); }

bool OutputFile::commit(std::string *error) {
    if (stdout_) {
        std::cout.flush();
        if (!std::cout) {
            *error = "stdout: write error";
            return false;
        }
        committed_ = true;
        return true;
    }
    file_.flush();
    const bool written = static_cast<bool>(file_);
    file_.close();
    if (!written || file_.fail()) {
        *error = path_ + ": write error";
        return false;
    }
    if (rename(temp_.c_str(), path_.c_str()) != 0) {
        *error = path_ + ": cannot rename " + temp_ + " to it: " + std::strerror(errno);
        return false;
    }
    committed_ = true;
    return true;
}
