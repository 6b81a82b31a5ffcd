// API tracing: the C declaration parser and the built-in libc table (see signature.h).
#include "apitrace/signature.h"

#include <cctype>

namespace sonde::apitrace {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool is_qualifier(std::string_view w) {
    return w == "const" || w == "volatile" || w == "restrict" || w == "__restrict" || w == "__restrict__" ||
           w == "register";
}

bool is_keyword(std::string_view w) {
    return w == "void" || w == "char" || w == "short" || w == "int" || w == "long" || w == "signed" ||
           w == "unsigned" || w == "float" || w == "double" || w == "_Bool" || w == "bool";
}

// The type named by a list of base-type keywords ("unsigned long int"), or false.
bool keyword_type(const std::vector<std::string_view> &words, Type &out) {
    int is_signed = 0, is_unsigned = 0, shorts = 0, longs = 0, chars = 0, ints = 0, floats = 0, doubles = 0,
        voids = 0, bools = 0;
    for (std::string_view w : words) {
        if (w == "signed")
            ++is_signed;
        else if (w == "unsigned")
            ++is_unsigned;
        else if (w == "short")
            ++shorts;
        else if (w == "long")
            ++longs;
        else if (w == "char")
            ++chars;
        else if (w == "int")
            ++ints;
        else if (w == "float")
            ++floats;
        else if (w == "double")
            ++doubles;
        else if (w == "void")
            ++voids;
        else
            ++bools;
    }
    const int sign = is_signed + is_unsigned;
    if (sign > 1 || ints > 1 || shorts > 1 || longs > 2 || (shorts && longs)) return false;
    const int others = chars + floats + doubles + voids + bools;
    if (others > 1 || (others && (shorts || longs || ints))) return false;
    if (voids || bools || floats || doubles) {
        if (sign) return false;
        out = voids ? Type::Void : bools ? Type::U8 : floats ? Type::Float : Type::Double;
        return true;
    }
    if (chars)
        out = is_unsigned ? Type::U8 : Type::S8;  // plain char is signed on x86-64
    else if (shorts)
        out = is_unsigned ? Type::U16 : Type::S16;
    else if (longs)
        out = is_unsigned ? Type::U64 : Type::S64;
    else
        out = is_unsigned ? Type::U32 : Type::S32;
    return true;
}

// Splits `text` at the commas that are outside parentheses.
std::vector<std::string_view> split_params(std::string_view text) {
    std::vector<std::string_view> out;
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '(')
            ++depth;
        else if (text[i] == ')')
            --depth;
        else if (text[i] == ',' && depth == 0) {
            out.push_back(trim(text.substr(start, i - start)));
            start = i + 1;
        }
    }
    out.push_back(trim(text.substr(start)));
    return out;
}

const char *const kStandardTypedefs[][2] = {
    {"size_t", "unsigned long"},
    {"ssize_t", "long"},
    {"off_t", "long"},
    {"off64_t", "long"},
    {"ptrdiff_t", "long"},
    {"intptr_t", "long"},
    {"uintptr_t", "unsigned long"},
    {"intmax_t", "long"},
    {"uintmax_t", "unsigned long"},
    {"int8_t", "signed char"},
    {"uint8_t", "unsigned char"},
    {"int16_t", "short"},
    {"uint16_t", "unsigned short"},
    {"int32_t", "int"},
    {"uint32_t", "unsigned int"},
    {"int64_t", "long"},
    {"uint64_t", "unsigned long"},
    {"pid_t", "int"},
    {"uid_t", "unsigned int"},
    {"gid_t", "unsigned int"},
    {"mode_t", "unsigned int"},
    {"socklen_t", "unsigned int"},
    {"useconds_t", "unsigned int"},
    {"time_t", "long"},
    {"clock_t", "long"},
    {"clockid_t", "int"},
    {"wchar_t", "int"},
};

// Common libc and libm functions: what a trace of a program that was not built with debug
// information can name without a prototype file. Variadic ones are listed so that they are
// refused by name rather than guessed.
const char kBuiltinTable[] = R"(
typedef void *locale_t;
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t maxlen);
int strcmp(const char *s1, const char *s2);
int strncmp(const char *s1, const char *s2, size_t n);
int strcasecmp(const char *s1, const char *s2);
int strncasecmp(const char *s1, const char *s2, size_t n);
int strcoll(const char *s1, const char *s2);
char *strcpy(char *dest, const char *src);
char *strncpy(char *dest, const char *src, size_t n);
char *strcat(char *dest, const char *src);
char *strncat(char *dest, const char *src, size_t n);
char *strchr(const char *s, int c);
char *strrchr(const char *s, int c);
char *strstr(const char *haystack, const char *needle);
char *strdup(const char *s);
char *strndup(const char *s, size_t n);
char *strtok(char *str, const char *delim);
char *strtok_r(char *str, const char *delim, char **saveptr);
size_t strspn(const char *s, const char *accept);
size_t strcspn(const char *s, const char *reject);
char *strpbrk(const char *s, const char *accept);
char *strerror(int errnum);
void *memcpy(void *dest, const void *src, size_t n);
void *memmove(void *dest, const void *src, size_t n);
void *memset(void *s, int c, size_t n);
int memcmp(const void *s1, const void *s2, size_t n);
void *memchr(const void *s, int c, size_t n);
void *malloc(size_t size);
void *calloc(size_t nmemb, size_t size);
void *realloc(void *ptr, size_t size);
void *reallocarray(void *ptr, size_t nmemb, size_t size);
void free(void *ptr);
int posix_memalign(void **memptr, size_t alignment, size_t size);
void *aligned_alloc(size_t alignment, size_t size);
int atoi(const char *nptr);
long atol(const char *nptr);
long long atoll(const char *nptr);
double atof(const char *nptr);
long strtol(const char *nptr, char **endptr, int base);
unsigned long strtoul(const char *nptr, char **endptr, int base);
long long strtoll(const char *nptr, char **endptr, int base);
unsigned long long strtoull(const char *nptr, char **endptr, int base);
double strtod(const char *nptr, char **endptr);
float strtof(const char *nptr, char **endptr);
int abs(int j);
long labs(long j);
int rand(void);
void srand(unsigned int seed);
int rand_r(unsigned int *seedp);
void qsort(void *base, size_t nmemb, size_t size, int (*compar)(const void *, const void *));
void *bsearch(const void *key, const void *base, size_t nmemb, size_t size, int (*compar)(const void *, const void *));
char *getenv(const char *name);
char *secure_getenv(const char *name);
int setenv(const char *name, const char *value, int overwrite);
int unsetenv(const char *name);
int putenv(char *string);
int system(const char *command);
int atexit(void (*function)(void));
int open(const char *pathname, int flags, ...);
int openat(int dirfd, const char *pathname, int flags, ...);
int creat(const char *pathname, mode_t mode);
int close(int fd);
ssize_t read(int fd, void *buf, size_t count);
ssize_t write(int fd, const void *buf, size_t count);
ssize_t pread(int fd, void *buf, size_t count, off_t offset);
ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset);
off_t lseek(int fd, off_t offset, int whence);
int dup(int oldfd);
int dup2(int oldfd, int newfd);
int pipe(int *pipefd);
int fsync(int fd);
int ftruncate(int fd, off_t length);
int unlink(const char *pathname);
int rmdir(const char *pathname);
int mkdir(const char *pathname, mode_t mode);
int chdir(const char *path);
char *getcwd(char *buf, size_t size);
int rename(const char *oldpath, const char *newpath);
int access(const char *pathname, int mode);
int chmod(const char *pathname, mode_t mode);
int stat(const char *pathname, struct stat *statbuf);
int fstat(int fd, struct stat *statbuf);
int lstat(const char *pathname, struct stat *statbuf);
int isatty(int fd);
FILE *fopen(const char *pathname, const char *mode);
FILE *fdopen(int fd, const char *mode);
FILE *freopen(const char *pathname, const char *mode, FILE *stream);
int fclose(FILE *stream);
size_t fread(void *ptr, size_t size, size_t nmemb, FILE *stream);
size_t fwrite(const void *ptr, size_t size, size_t nmemb, FILE *stream);
int fflush(FILE *stream);
int fseek(FILE *stream, long offset, int whence);
long ftell(FILE *stream);
void rewind(FILE *stream);
int feof(FILE *stream);
int ferror(FILE *stream);
int fileno(FILE *stream);
int fgetc(FILE *stream);
int getc(FILE *stream);
int getchar(void);
char *fgets(char *s, int size, FILE *stream);
int fputc(int c, FILE *stream);
int putc(int c, FILE *stream);
int putchar(int c);
int fputs(const char *s, FILE *stream);
int puts(const char *s);
ssize_t getline(char **lineptr, size_t *n, FILE *stream);
int printf(const char *format, ...);
int fprintf(FILE *stream, const char *format, ...);
int dprintf(int fd, const char *format, ...);
int sprintf(char *str, const char *format, ...);
int snprintf(char *str, size_t size, const char *format, ...);
int scanf(const char *format, ...);
int sscanf(const char *str, const char *format, ...);
int fscanf(FILE *stream, const char *format, ...);
int ioctl(int fd, unsigned long request, ...);
int fcntl(int fd, int cmd, ...);
DIR *opendir(const char *name);
DIR *fdopendir(int fd);
struct dirent *readdir(DIR *dirp);
int closedir(DIR *dirp);
pid_t getpid(void);
pid_t getppid(void);
pid_t gettid(void);
uid_t getuid(void);
uid_t geteuid(void);
gid_t getgid(void);
unsigned int sleep(unsigned int seconds);
int usleep(useconds_t usec);
int nanosleep(const struct timespec *req, struct timespec *rem);
time_t time(time_t *tloc);
int clock_gettime(clockid_t clockid, struct timespec *tp);
int gettimeofday(struct timeval *tv, void *tz);
clock_t clock(void);
int sched_yield(void);
int socket(int domain, int type, int protocol);
int connect(int sockfd, const struct sockaddr *addr, socklen_t addrlen);
int bind(int sockfd, const struct sockaddr *addr, socklen_t addrlen);
int listen(int sockfd, int backlog);
int accept(int sockfd, struct sockaddr *addr, socklen_t *addrlen);
ssize_t send(int sockfd, const void *buf, size_t len, int flags);
ssize_t recv(int sockfd, void *buf, size_t len, int flags);
int shutdown(int sockfd, int how);
int poll(struct pollfd *fds, unsigned long nfds, int timeout);
void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset);
int munmap(void *addr, size_t length);
int mprotect(void *addr, size_t len, int prot);
int pthread_mutex_lock(pthread_mutex_t *mutex);
int pthread_mutex_trylock(pthread_mutex_t *mutex);
int pthread_mutex_unlock(pthread_mutex_t *mutex);
int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex);
int pthread_cond_signal(pthread_cond_t *cond);
int pthread_cond_broadcast(pthread_cond_t *cond);
int pthread_join(unsigned long thread, void **retval);
char *setlocale(int category, const char *locale);
int toupper(int c);
int tolower(int c);
double sqrt(double x);
double cbrt(double x);
double pow(double x, double y);
double exp(double x);
double log(double x);
double log2(double x);
double log10(double x);
double sin(double x);
double cos(double x);
double tan(double x);
double atan2(double y, double x);
double fabs(double x);
double floor(double x);
double ceil(double x);
double round(double x);
double fmod(double x, double y);
double ldexp(double x, int exp);
float sqrtf(float x);
float powf(float x, float y);
float expf(float x);
float logf(float x);
float sinf(float x);
float cosf(float x);
)";

}  // namespace

const char *type_name(Type t) {
    switch (t) {
        case Type::Void: return "void";
        case Type::S8: return "signed char";
        case Type::U8: return "unsigned char";
        case Type::S16: return "short";
        case Type::U16: return "unsigned short";
        case Type::S32: return "int";
        case Type::U32: return "unsigned int";
        case Type::S64: return "long";
        case Type::U64: return "unsigned long";
        case Type::Float: return "float";
        case Type::Double: return "double";
        case Type::Pointer: return "void *";
        case Type::String: return "const char *";
    }
    return "?";
}

Prototypes::Prototypes() {
    for (const auto &td : kStandardTypedefs) {
        Type t = Type::Void;
        std::string name, error;
        parse_type(td[1], false, t, name, error);
        typedefs_[td[0]] = t;
    }
}

// One type with an optional (want_name: required) declarator name: "const char *s",
// "unsigned long", "struct stat *buf", "int (*cmp)(const void *, const void *)", "char *v[]".
bool Prototypes::parse_type(std::string_view text, bool want_name, Type &type, std::string &name,
                            std::string &error) const {
    text = trim(text);
    name.clear();
    const size_t paren = text.find('(');
    if (paren != std::string_view::npos) {
        // A function pointer: RET (*NAME)(ARGS). Only its name matters; it passes as a pointer.
        std::string_view rest = trim(text.substr(paren + 1));
        if (rest.empty() || rest.front() != '*') {
            error = "'" + std::string(text) + "': only function pointers may contain '('";
            return false;
        }
        rest = trim(rest.substr(1));
        size_t n = 0;
        while (n < rest.size() && ident_char(rest[n])) ++n;
        name = std::string(rest.substr(0, n));
        rest = trim(rest.substr(n));
        if (rest.empty() || rest.front() != ')' || rest.find('(') == std::string_view::npos ||
            rest.back() != ')') {
            error = "'" + std::string(text) + "': malformed function pointer";
            return false;
        }
        if (want_name && name.empty()) {
            error = "'" + std::string(text) + "': a name is missing";
            return false;
        }
        type = Type::Pointer;
        return true;
    }
    std::vector<std::string_view> words;
    int stars = 0;
    bool const_before_star = false;
    for (size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++i;
        } else if (c == '*') {
            ++stars;
            ++i;
        } else if (c == '[') {
            const size_t close = text.find(']', i);
            if (close == std::string_view::npos) {
                error = "'" + std::string(text) + "': '[' without ']'";
                return false;
            }
            ++stars;  // an array parameter is a pointer
            i = close + 1;
        } else if (ident_start(c)) {
            size_t j = i;
            while (j < text.size() && ident_char(text[j])) ++j;
            const std::string_view w = text.substr(i, j - i);
            if (w == "const" && stars == 0) const_before_star = true;
            if (!is_qualifier(w)) words.push_back(w);
            i = j;
        } else {
            error = "'" + std::string(text) + "': unexpected character '" + std::string(1, c) + "'";
            return false;
        }
    }
    if (words.empty()) {
        error = "'" + std::string(text) + "': a type is missing";
        return false;
    }
    const bool tagged = words[0] == "struct" || words[0] == "union" || words[0] == "enum";
    const size_t type_words = tagged ? 2 : 1;
    if (words.size() > type_words && !is_keyword(words.back())) {
        name = std::string(words.back());
        words.pop_back();
    }
    if (want_name && name.empty()) {
        error = "'" + std::string(text) + "': a name is missing";
        return false;
    }
    if (tagged) {
        if (words.size() != 2) {
            error = "'" + std::string(text) + "': malformed " + std::string(words[0]) + " type";
            return false;
        }
        if (stars > 0) {
            type = Type::Pointer;
        } else if (words[0] == "enum") {
            type = Type::S32;
        } else {
            error = "'" + std::string(text) + "': a " + std::string(words[0]) +
                    " passed by value is not supported";
            return false;
        }
        return true;
    }
    Type base = Type::Void;
    bool known = false;
    bool plain_char = false;
    if (is_keyword(words[0])) {
        for (std::string_view w : words) {
            if (!is_keyword(w)) {
                error = "'" + std::string(text) + "': '" + std::string(w) + "' does not belong in a type";
                return false;
            }
        }
        if (!keyword_type(words, base)) {
            error = "'" + std::string(text) + "': not a valid type";
            return false;
        }
        known = true;
        plain_char = words.size() == 1 && words[0] == "char";
    } else if (words.size() == 1) {
        const auto it = typedefs_.find(words[0]);
        if (it != typedefs_.end()) {
            base = it->second;
            known = true;
        }
    } else {
        error = "'" + std::string(text) + "': '" + std::string(words[1]) + "' does not belong in a type";
        return false;
    }
    if (stars > 0) {
        // Any pointer passes as an address; only `const char *` is also read as text.
        type = stars == 1 && plain_char && const_before_star ? Type::String : Type::Pointer;
        return true;
    }
    if (!known) {
        error = "unknown type '" + std::string(words[0]) + "' (declare it with a typedef line)";
        return false;
    }
    type = base;
    return true;
}

bool Prototypes::parse_line(std::string_view line, std::string &error) {
    line = trim(line);
    if (line.empty() || line.back() != ';') {
        error = "a declaration must end with ';'";
        return false;
    }
    line = trim(line.substr(0, line.size() - 1));
    if (line.substr(0, 8) == "typedef ") {
        Type t = Type::Void;
        std::string name;
        if (!parse_type(line.substr(8), true, t, name, error)) return false;
        if (is_keyword(name)) {
            error = "typedef of the keyword '" + name + "'";
            return false;
        }
        typedefs_[name] = t;
        return true;
    }
    if (line.substr(0, 7) == "extern ") line = trim(line.substr(7));
    const size_t open = line.find('(');
    if (open == std::string_view::npos || line.back() != ')') {
        error = "not a function declaration: expected 'TYPE NAME(ARGUMENTS);'";
        return false;
    }
    Signature sig;
    if (!parse_type(line.substr(0, open), true, sig.ret, sig.name, error)) return false;
    const std::string_view params = trim(line.substr(open + 1, line.size() - open - 2));
    if (!params.empty() && params != "void") {
        const std::vector<std::string_view> parts = split_params(params);
        for (size_t i = 0; i < parts.size(); ++i) {
            if (parts[i] == "...") {
                if (i + 1 != parts.size() || i == 0) {
                    error = sig.name + ": '...' must follow the fixed arguments";
                    return false;
                }
                sig.variadic = true;
                break;
            }
            Type t = Type::Void;
            std::string name;
            if (!parse_type(parts[i], false, t, name, error)) {
                error = sig.name + ": argument " + std::to_string(i + 1) + ": " + error;
                return false;
            }
            if (t == Type::Void) {
                error = sig.name + ": argument " + std::to_string(i + 1) + " has type void";
                return false;
            }
            sig.args.push_back(t);
            sig.arg_names.push_back(name.empty() ? "arg" + std::to_string(i + 1) : name);
        }
    }
    if (sig.args.size() > kMaxArgs) {
        error = sig.name + ": more than " + std::to_string(kMaxArgs) + " arguments";
        return false;
    }
    std::string key = sig.name;
    functions_[key] = std::move(sig);
    return true;
}

bool Prototypes::parse(std::string_view text, const std::string &origin, std::string &error) {
    size_t lineno = 0;
    while (!text.empty()) {
        ++lineno;
        const size_t nl = text.find('\n');
        std::string_view line = trim(text.substr(0, nl));
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        if (line.empty() || line[0] == '#' || line.substr(0, 2) == "//") continue;
        std::string what;
        if (!parse_line(line, what)) {
            error = origin + ":" + std::to_string(lineno) + ": " + what;
            return false;
        }
    }
    return true;
}

const Signature *Prototypes::find(std::string_view name) const {
    const auto it = functions_.find(name);
    return it == functions_.end() ? nullptr : &it->second;
}

const Prototypes &builtin_prototypes() {
    static const Prototypes table = [] {
        Prototypes p;
        std::string error;
        p.parse(kBuiltinTable, "built-in table", error);
        return p;
    }();
    return table;
}

}  // namespace sonde::apitrace
