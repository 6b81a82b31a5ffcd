// An output file that appears only when it is complete (see output.h).
#include "cli/output.h"

#include <fcntl.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sonde::cli {

namespace {

// What the signal handler needs, in storage it can read without locks or allocation.
char g_temp[PATH_MAX];
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr int kNumSignals = sizeof kSignals / sizeof kSignals[0];
struct sigaction g_old[kNumSignals];
bool g_installed[kNumSignals];
struct sigaction g_old_xfsz;

// Removes the temporary file, then lets the signal do what it did before (by default, end the
// process): the handler's previous disposition is restored and the signal raised again; it is
// delivered once this handler returns. Only async-signal-safe calls.
extern "C" void remove_temp_on_signal(int sig) {
    if (g_temp[0] != '\0') unlink(g_temp);
    for (int i = 0; i < kNumSignals; ++i)
        if (kSignals[i] == sig) sigaction(sig, &g_old[i], nullptr);
    raise(sig);
}

void install_handlers() {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = remove_temp_on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < kNumSignals; ++i) {
        g_installed[i] = false;
        if (sigaction(kSignals[i], nullptr, &g_old[i]) != 0) continue;
        if (g_old[i].sa_handler == SIG_IGN) continue;  // e.g. SIGHUP under nohup: stays ignored
        g_installed[i] = sigaction(kSignals[i], &sa, nullptr) == 0;
    }
    struct sigaction ign;
    std::memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGXFSZ, &ign, &g_old_xfsz);
}

void restore_handlers() {
    for (int i = 0; i < kNumSignals; ++i)
        if (g_installed[i]) sigaction(kSignals[i], &g_old[i], nullptr);
    sigaction(SIGXFSZ, &g_old_xfsz, nullptr);
}

std::string dir_of(const std::string &path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string &path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

AtomicOutput::~AtomicOutput() { discard(); }

AtomicOutput::Created AtomicOutput::create(const std::string &path, bool replace, std::string *error) {
    discard();
    replace_ = replace;
    target_ = path;
    struct stat st;
    if (lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
        char resolved[PATH_MAX];
        if (realpath(path.c_str(), resolved) == nullptr) {
            *error = path + ": symbolic link to a file that cannot be resolved: " + std::strerror(errno);
            return Created::refused;
        }
        target_ = resolved;
    }
    mode_t mode = 0;
    if (stat(target_.c_str(), &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            *error = path + ": exists and is not a regular file";
            return Created::refused;
        }
        if (!replace) {
            *error = path + ": exists (--force replaces it)";
            return Created::exists;
        }
        mode = st.st_mode & 0777;
    } else if (errno == ENOENT) {
        const mode_t mask = umask(0);
        umask(mask);
        mode = 0644 & ~mask;
    } else {
        *error = path + ": " + std::strerror(errno);
        return Created::failed;
    }
    std::string base = base_of(target_);
    if (base.size() > 100) base.resize(100);
    std::string tmpl = dir_of(target_) + "/." + base + ".XXXXXX";
    if (tmpl.size() >= sizeof g_temp) {
        *error = path + ": name too long";
        return Created::failed;
    }
    // The signals are held from before the temporary file exists until the handler knows its
    // name, so that a signal arriving in between cannot leave the file behind.
    sigset_t hold, previous;
    sigemptyset(&hold);
    for (int sig : kSignals) sigaddset(&hold, sig);
    pthread_sigmask(SIG_BLOCK, &hold, &previous);
    fd_ = mkostemp(&tmpl[0], O_CLOEXEC);
    if (fd_ >= 0) {
        std::memcpy(g_temp, tmpl.c_str(), tmpl.size() + 1);
        install_handlers();
        handlers_ = true;
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    if (fd_ < 0) {
        *error =
            path + ": cannot create a temporary file in " + dir_of(target_) + ": " + std::strerror(errno);
        return Created::failed;
    }
    temp_ = tmpl;
    if (fchmod(fd_, mode) != 0) {
        *error = path + ": cannot set the permissions of " + temp_ + ": " + std::strerror(errno);
        discard();
        return Created::failed;
    }
    return Created::ok;
}

bool AtomicOutput::commit(std::string *error) {
    if (temp_.empty()) {
        *error = "no output file was created";
        return false;
    }
    if (fsync(fd_) != 0) {
        *error = target_ + ": cannot flush to disk: " + std::strerror(errno);
        discard();
        return false;
    }
    const int fd = fd_;
    fd_ = -1;
    if (close(fd) != 0) {
        *error = target_ + ": close failed: " + std::strerror(errno);
        discard();
        return false;
    }
    int rc = 0;
    if (replace_) {
        rc = rename(temp_.c_str(), target_.c_str());
    } else {
        // Refuse an output that appeared since create(), atomically where the file system can.
        rc = renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_NOREPLACE);
        if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
            struct stat st;
            if (lstat(target_.c_str(), &st) == 0) {
                errno = EEXIST;
                rc = -1;
            } else {
                rc = rename(temp_.c_str(), target_.c_str());
            }
        }
    }
    if (rc != 0) {
        *error = errno == EEXIST ? target_ + ": exists (created meanwhile; --force replaces it)"
                                 : target_ + ": cannot rename " + temp_ + " onto it: " + std::strerror(errno);
        discard();
        return false;
    }
    temp_.clear();
    g_temp[0] = '\0';
    if (handlers_) restore_handlers();
    handlers_ = false;
    return true;
}

void AtomicOutput::discard() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    if (!temp_.empty()) unlink(temp_.c_str());
    temp_.clear();
    g_temp[0] = '\0';
    if (handlers_) restore_handlers();
    handlers_ = false;
}

}  // namespace sonde::cli
