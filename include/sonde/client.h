/**
 * @file client.h
 * @brief Client plugins: events, observers, group filters and data requests.
 *
 * A client is a shared object that exports `sonde_client_instantiate` (a
 * ::sonde_client_instantiate_fn; or a function of the
 * same type registered with ::sonde_register_client). Sonde hands it a ::sonde_api_t function
 * table and its ::sonde_client_id_t; the client registers observers for the events it wants
 * (with a bitset of the data items each observer needs), restricts event groups with filters,
 * and asks for more data with the request functions of the table. Several clients run in one
 * process at once; each is notified only of the events it registered and its filters accept.
 *
 * This header is what a client includes. The program side of the same concept (load or
 * register clients, report calls, memory references, user marks and ranges, and module changes)
 * is declared in sonde/instrument.h, which this header includes at its end.
 *
 * Added in version 1.1 (`SONDE_1.1` in the version script). See docs/clients.md.
 */
#ifndef SONDE_CLIENT_H
#define SONDE_CLIENT_H

#include <sonde/defs.h>
#include <sonde/status.h>

SONDE_BEGIN_DECLS

/**
 * The client interface version this header describes; ::sonde_api_t::abi_version carries the library's.
 * @since 1.1
 */
#define SONDE_CLIENT_ABI_VERSION 1u

/** @brief Identifies a loaded (or failed) client. A zero handle is never valid. @since 1.1 */
typedef struct sonde_client_id_t {
    uint64_t handle; /**< Opaque value. */
} sonde_client_id_t;

/**
 * @brief Identifies a method (an instrumented function). Method ids are dense and stable for
 * the life of the process: ::sonde_method_index gives 0, 1, 2, ... in order of first call.
 * @since 1.1
 */
typedef struct sonde_method_id_t {
    uint64_t handle; /**< Opaque value; see ::sonde_method_index. */
} sonde_method_id_t;

/**
 * @brief Identifies a thread Sonde has seen; dense and never reused within a process.
 * @since 1.1
 */
typedef struct sonde_thread_id_t {
    uint64_t handle; /**< Opaque value; see ::sonde_thread_index. A zero handle in a request means "the calling thread". */
} sonde_thread_id_t;

/**
 * @brief Identifies a loaded module (the program, a shared object); dense, never reused.
 * @since 1.1
 */
typedef struct sonde_module_id_t {
    uint64_t handle; /**< Opaque value; see ::sonde_module_index. */
} sonde_module_id_t;

/**
 * @brief Identifies a traced library function (API_CALL events): dense and stable for the life
 * of the process, in the order functions were traced.
 * @since 1.2
 */
typedef struct sonde_api_function_id_t {
    uint64_t handle; /**< Opaque value; see ::sonde_api_function_index. */
} sonde_api_function_id_t;

/** @brief Dense index (0, 1, 2, ...) of a valid method id, for clients that keep per-method arrays.
 * @param id A valid method id. @return Its index.
 * @since 1.1 */
static inline uint32_t sonde_method_index(sonde_method_id_t id) { return (uint32_t)(id.handle & 0xffffffffu) - 1u; }
/**
 * @brief Dense index of a valid thread id. @param id A valid thread id. @return Its index.
 * @since 1.1
 */
static inline uint32_t sonde_thread_index(sonde_thread_id_t id) { return (uint32_t)(id.handle & 0xffffffffu) - 1u; }
/**
 * @brief Dense index of a valid module id. @param id A valid module id. @return Its index.
 * @since 1.1
 */
static inline uint32_t sonde_module_index(sonde_module_id_t id) { return (uint32_t)(id.handle & 0xffffffffu) - 1u; }
/**
 * @brief Dense index of a valid traced function id. @param id A valid id. @return Its index.
 * @since 1.2
 */
static inline uint32_t sonde_api_function_index(sonde_api_function_id_t id) { return (uint32_t)(id.handle & 0xffffffffu) - 1u; }

/** @brief Event groups, the unit of filtering. Cross the ABI as uint32_t. @since 1.1 */
enum sonde_event_group {
    SONDE_EVENT_GROUP_LIFECYCLE = 0,  /**< Runtime init, session start/stop, shutdown. */
    SONDE_EVENT_GROUP_THREAD = 1,     /**< Thread start and end. */
    SONDE_EVENT_GROUP_MODULE = 2,     /**< Module load and unload. */
    SONDE_EVENT_GROUP_CALL_GRAPH = 3, /**< Method enter and leave. */
    SONDE_EVENT_GROUP_MEMORY = 4,     /**< Memory references reported by ::sonde_memory_access. */
    SONDE_EVENT_GROUP_USER = 5,       /**< Marks and ranges the program reports. */
    /**
     * Calls into shared-library functions traced with `sonde run --api` (or `sonde record --api`):
     * API_CALL_ENTER and API_CALL_LEAVE. Its filter is asked once per traced function. @since 1.2
     */
    SONDE_EVENT_GROUP_API_CALL = 6,
    SONDE_EVENT_GROUP_COUNT = 7 /**< Number of groups in this version; grows as groups are appended (1.1 had ::SONDE_EVENT_GROUP_COUNT_1_1). */
};

/**
 * @brief Number of event groups in version 1.1 (LIFECYCLE..USER): what a client built against
 * 1.1 knows. Pinned, unlike ::SONDE_EVENT_GROUP_COUNT. @since 1.2
 */
#define SONDE_EVENT_GROUP_COUNT_1_1 6u

/** @brief Events. Cross the ABI as uint32_t; the group of each is given beside it. @since 1.1 */
enum sonde_event {
    SONDE_EVENT_RUNTIME_INIT = 0,    /**< LIFECYCLE: the runtime is initialised; data requests work from here. */
    SONDE_EVENT_SESSION_START = 1,   /**< LIFECYCLE: a session started (SESSION_ID). */
    SONDE_EVENT_SESSION_STOP = 2,    /**< LIFECYCLE: a session stopped (SESSION_ID). */
    SONDE_EVENT_SHUTDOWN = 3,        /**< LIFECYCLE: ::sonde_finalize (or process exit under the launcher). */
    SONDE_EVENT_THREAD_START = 4,    /**< THREAD: a thread starts (or is first seen). */
    SONDE_EVENT_THREAD_END = 5,      /**< THREAD: a thread ends. */
    SONDE_EVENT_MODULE_LOAD = 6,     /**< MODULE: a module is loaded (initial modules at RUNTIME_INIT). */
    SONDE_EVENT_MODULE_UNLOAD = 7,   /**< MODULE: a module is unloaded. */
    SONDE_EVENT_METHOD_ENTER = 8,    /**< CALL_GRAPH: a method is entered. */
    SONDE_EVENT_METHOD_LEAVE = 9,    /**< CALL_GRAPH: a method returns. */
    SONDE_EVENT_MEMORY_ACCESS = 10,  /**< MEMORY: a memory reference. */
    SONDE_EVENT_USER_MARK = 11,      /**< USER: a mark with a text and an optional payload. */
    SONDE_EVENT_USER_RANGE_PUSH = 12, /**< USER: a named range opens on the calling thread. */
    SONDE_EVENT_USER_RANGE_POP = 13, /**< USER: the innermost range of the calling thread closes (NAME is its text). */
    /**
     * CALL_GRAPH: a method is seen for the first time, once per method and process, before its
     * first METHOD_ENTER on any thread (METHOD_ID, MODULE_ID, ADDRESS, SIZE, NAME: its short
     * name, THREAD_ID and TIMESTAMP of the thread that first called it). Sent to the clients
     * whose filters accept the method, one at a time (like filters, with Sonde's registry
     * lock held: data requests work, other threads' first calls wait). A library older than
     * 1.2 answers INVALID_ARGUMENT to its registration. @since 1.2
     */
    SONDE_EVENT_NEW_METHOD = 14,
    /**
     * API_CALL: a traced library function is called, before it runs (API_FUNCTION,
     * CORRELATION_ID, ARGUMENTS, NAME: the function's name, MODULE_ID: its library, STACK_DEPTH:
     * the traced calls already open on this thread, THREAD_ID, TIMESTAMP). Runs on the calling
     * thread, possibly inside a signal handler (see docs/api-tracing.md). @since 1.2
     */
    SONDE_EVENT_API_CALL_ENTER = 15,
    /**
     * API_CALL: a traced library function has returned (the items of API_CALL_ENTER, with the
     * same correlation id and arguments, plus RETURN_VALUE and BEGIN_TIMESTAMP; TIMESTAMP is
     * when it returned). @since 1.2
     */
    SONDE_EVENT_API_CALL_LEAVE = 16,
    SONDE_EVENT_COUNT = 17 /**< Number of events in this version; grows as events are appended (1.1 had ::SONDE_EVENT_COUNT_1_1). */
};

/**
 * @brief Number of events in version 1.1 (RUNTIME_INIT..USER_RANGE_POP): what a client built
 * against 1.1 knows. Pinned, unlike ::SONDE_EVENT_COUNT. @since 1.2
 */
#define SONDE_EVENT_COUNT_1_1 14u

/**
 * @brief Data items: a bitset used three ways: what an observer asks for, what a data request
 * asks for, and `valid_items` (what was filled). Each event and request documents its items.
 * @since 1.1
 */
enum sonde_data_item {
    SONDE_DATA_METHOD_ID = 1u << 0,      /**< `method`. */
    SONDE_DATA_THREAD_ID = 1u << 1,      /**< `thread`. */
    SONDE_DATA_TIMESTAMP = 1u << 2,      /**< `timestamp` (ns, ::sonde_get_timestamp's clock). */
    SONDE_DATA_MODULE_ID = 1u << 3,      /**< `module`. */
    SONDE_DATA_CALL_SITE = 1u << 4,      /**< `call_site`: the return address in the caller. */
    SONDE_DATA_STACK_DEPTH = 1u << 5,    /**< `stack_depth`: 0 for the outermost method of the thread. */
    SONDE_DATA_ADDRESS = 1u << 6,        /**< `address`: function, memory or module load address. */
    SONDE_DATA_SIZE = 1u << 7,           /**< `size`: access, function or module size in bytes. */
    SONDE_DATA_ACCESS_TYPE = 1u << 8,    /**< `access_type`: a ::sonde_access_type value. */
    SONDE_DATA_USER_PAYLOAD = 1u << 9,   /**< `payload` and `payload_size`. */
    SONDE_DATA_NAME = 1u << 10,          /**< Thread name, module name, mark text, method short name. */
    SONDE_DATA_SESSION_ID = 1u << 11,    /**< `session`. */
    SONDE_DATA_CLASS_NAME = 1u << 12,    /**< Method requests: class or namespace ("" for none). */
    SONDE_DATA_FULL_NAME = 1u << 13,     /**< Method requests: the demangled full name with parameters. */
    SONDE_DATA_MANGLED_NAME = 1u << 14,  /**< Method requests: the ELF symbol name. */
    SONDE_DATA_SOURCE_FILE = 1u << 15,   /**< Method requests: source file from DWARF. */
    SONDE_DATA_SOURCE_LINE = 1u << 16,   /**< Method requests: source line from DWARF. */
    SONDE_DATA_VISIBILITY = 1u << 17,    /**< Method requests: a ::sonde_visibility value. */
    SONDE_DATA_PATH = 1u << 18,          /**< Module path (MODULE events: in `name`, instead of the file name). */
    SONDE_DATA_OS_THREAD_ID = 1u << 19,  /**< `os_thread_id`: the kernel thread id (gettid). */
    SONDE_DATA_STATE = 1u << 20,         /**< Requests: whether a thread is alive or a module loaded. */
    SONDE_DATA_API_FUNCTION = 1u << 21,  /**< `api_function`: the traced function (API_CALL events). @since 1.2 */
    SONDE_DATA_CORRELATION_ID = 1u << 22, /**< `correlation_id`: one per traced call, unique in the process (API_CALL events). @since 1.2 */
    SONDE_DATA_ARGUMENTS = 1u << 23,     /**< `arguments` and `argument_count` (API_CALL events). @since 1.2 */
    SONDE_DATA_RETURN_VALUE = 1u << 24,  /**< `return_value` (API_CALL_LEAVE). @since 1.2 */
    SONDE_DATA_BEGIN_TIMESTAMP = 1u << 25 /**< `begin_timestamp` (API_CALL_LEAVE). @since 1.2 */
};

/** @brief Memory access types (`access_type`). @since 1.1 */
enum sonde_access_type {
    SONDE_ACCESS_READ = 0,   /**< A load. */
    SONDE_ACCESS_WRITE = 1,  /**< A store. */
    SONDE_ACCESS_MODIFY = 2, /**< A load and a store to the same bytes. */
    SONDE_ACCESS_FETCH = 3   /**< An instruction fetch. */
};

/**
 * @brief ELF symbol visibility of a method, Sonde's analogue of Martini's access type.
 * @since 1.1
 */
enum sonde_visibility {
    SONDE_VISIBILITY_UNKNOWN = 0, /**< No symbol was found. */
    SONDE_VISIBILITY_GLOBAL = 1,  /**< STB_GLOBAL: callable from other modules. */
    SONDE_VISIBILITY_LOCAL = 2,   /**< STB_LOCAL: a static function. */
    SONDE_VISIBILITY_WEAK = 3     /**< STB_WEAK (inline functions, templates). */
};

/**
 * @brief What an observer receives. Only the items the observer asked for (and the event
 * provides) are filled; `valid_items` says which. Every other field is zero. Pointers are
 * valid only during the handler call.
 *
 * Grows at the end. Sonde sets `struct_size` to its own sizeof, never less than
 * ::SONDE_EVENT_DATA_SIZE_1_1: a client must check that `struct_size` covers a field appended
 * after that size before reading it (a newer client can be handed an older library's struct).
 * @since 1.1
 */
typedef struct sonde_event_data_t {
    uint32_t struct_size;        /**< sizeof this struct in the library. */
    uint32_t event;              /**< A ::sonde_event value. */
    uint64_t valid_items;        /**< ::sonde_data_item bits that are filled. */
    sonde_method_id_t method;    /**< METHOD_ID (MEMORY_ACCESS: the innermost method of the thread). */
    sonde_thread_id_t thread;    /**< THREAD_ID. */
    sonde_module_id_t module;    /**< MODULE_ID. */
    sonde_session_id_t session;  /**< SESSION_ID. */
    uint64_t timestamp;          /**< TIMESTAMP. */
    uint64_t call_site;          /**< CALL_SITE. */
    uint64_t address;            /**< ADDRESS. */
    uint64_t size;               /**< SIZE. */
    uint64_t os_thread_id;       /**< OS_THREAD_ID. */
    uint32_t stack_depth;        /**< STACK_DEPTH. */
    uint32_t access_type;        /**< ACCESS_TYPE. */
    const char *name;            /**< NAME (NUL-terminated). */
    const void *payload;         /**< USER_PAYLOAD. */
    uint64_t payload_size;       /**< USER_PAYLOAD. */
    sonde_api_function_id_t api_function; /**< API_FUNCTION. @since 1.2 */
    uint64_t correlation_id;     /**< CORRELATION_ID. @since 1.2 */
    uint64_t begin_timestamp;    /**< BEGIN_TIMESTAMP: when the traced function began (ns, after the API_CALL_ENTER observers returned). @since 1.2 */
    uint64_t return_value;       /**< RETURN_VALUE, as a 64-bit value (0 for void; a double's bits for a double). @since 1.2 */
    const uint64_t *arguments;   /**< ARGUMENTS: the arguments as 64-bit values (a double's bits for a double), valid during the handler call. @since 1.2 */
    uint32_t argument_count;     /**< ARGUMENTS: the number of values in `arguments`. @since 1.2 */
    uint32_t reserved2;          /**< Zero. @since 1.2 */
} sonde_event_data_t;

/**
 * @brief Size of sonde_event_data_t in version 1.1, which introduced it: every field above is
 * present when struct_size is at least this.
 * A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.1
 */
#define SONDE_EVENT_DATA_SIZE_1_1 120u

/**
 * @brief Size of sonde_event_data_t in version 1.2: the API_CALL fields (`api_function` ..
 * `argument_count`) are present when struct_size is at least this. A literal, valid for x86-64.
 * @since 1.2
 */
#define SONDE_EVENT_DATA_SIZE_1_2 168u

/**
 * @brief An observer. Called on the thread where the event happens, possibly on several
 * threads at once; it must not block for long and must not throw. Calls it makes to
 * instrumented functions are not reported (Sonde never recurses into itself).
 * @since 1.1
 */
typedef void (*sonde_event_handler_t)(const sonde_event_data_t *data, void *user_data);

/**
 * @brief What a group filter sees about one element (a method, a thread or a module). Strings
 * are valid only during the call.
 *
 * Grows at the end like ::sonde_event_data_t: `struct_size` is Sonde's own sizeof, never less
 * than ::SONDE_FILTER_ELEMENT_SIZE_1_1; check it before reading a field appended after that size.
 * @since 1.1
 */
typedef struct sonde_filter_element_t {
    uint32_t struct_size;        /**< sizeof this struct in the library. */
    uint32_t group;              /**< The ::sonde_event_group being filtered. */
    sonde_method_id_t method;    /**< CALL_GRAPH: the method. */
    sonde_thread_id_t thread;    /**< THREAD: the thread. */
    sonde_module_id_t module;    /**< CALL_GRAPH: the method's module; MODULE: the module. */
    const char *name;            /**< Method short name (no scope, no parameters), thread name or module file name; "" if unknown. */
    const char *class_name;      /**< CALL_GRAPH: class or namespace of the method ("" for none). */
    const char *full_name;       /**< CALL_GRAPH: demangled full name; "" if unknown. */
    const char *module_name;     /**< CALL_GRAPH and MODULE: file name of the module. */
    const char *path;            /**< MODULE: the module's path. */
    uint32_t visibility;         /**< CALL_GRAPH: a ::sonde_visibility value. */
    uint32_t reserved;           /**< Zero. */
    sonde_api_function_id_t api_function; /**< API_CALL: the traced function (then `name` is its name, `full_name` its declaration, `module`, `module_name` and `path` its library). @since 1.2 */
} sonde_filter_element_t;

/**
 * @brief Size of sonde_filter_element_t in version 1.1, which introduced it. A literal, valid
 * for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.1
 */
#define SONDE_FILTER_ELEMENT_SIZE_1_1 80u

/**
 * @brief Size of sonde_filter_element_t in version 1.2: `api_function` is present when
 * struct_size is at least this. A literal, valid for x86-64.
 * @since 1.2
 */
#define SONDE_FILTER_ELEMENT_SIZE_1_2 88u

/**
 * @brief A group filter: returns true to be notified of the element's events. Asked once per
 * element and client; the answer is cached. Filters run one at a time (Sonde serialises them).
 * @since 1.1
 */
typedef bool (*sonde_filter_fn_t)(const sonde_filter_element_t *element, void *user_data);

/**
 * @brief A string in the array protocol: the caller provides `entries` (room for `size` bytes);
 * Sonde writes at most `size` bytes, always NUL-terminated when `size > 0`, and sets
 * `actual_size` to the length plus one. Too small a `size` answers BUFFER_TOO_SHORT.
 * @since 1.1
 */
typedef struct sonde_string_t {
    char *entries;        /**< Caller's storage, may be NULL when size is 0. */
    uint32_t size;        /**< Bytes of storage. */
    uint32_t actual_size; /**< Set by Sonde: bytes needed, including the NUL. */
} sonde_string_t;

/** @brief An array of method ids in the array protocol (see ::sonde_string_t). @since 1.1 */
typedef struct sonde_method_array_t {
    sonde_method_id_t *entries; /**< Caller's storage. */
    uint32_t size;              /**< Entries of storage. */
    uint32_t actual_size;       /**< Set by Sonde: entries that exist. */
} sonde_method_array_t;

/** @brief An array of thread ids in the array protocol. @since 1.1 */
typedef struct sonde_thread_array_t {
    sonde_thread_id_t *entries; /**< Caller's storage. */
    uint32_t size;              /**< Entries of storage. */
    uint32_t actual_size;       /**< Set by Sonde: entries that exist. */
} sonde_thread_array_t;

/** @brief An array of module ids in the array protocol. @since 1.1 */
typedef struct sonde_module_array_t {
    sonde_module_id_t *entries; /**< Caller's storage. */
    uint32_t size;              /**< Entries of storage. */
    uint32_t actual_size;       /**< Set by Sonde: entries that exist. */
} sonde_module_array_t;

/** @brief An array of client ids in the array protocol. @since 1.1 */
typedef struct sonde_client_array_t {
    sonde_client_id_t *entries; /**< Caller's storage. */
    uint32_t size;              /**< Entries of storage. */
    uint32_t actual_size;       /**< Set by Sonde: entries that exist. */
} sonde_client_array_t;

/**
 * @brief Method information. Set `struct_size` and the storage of the strings you request;
 * the request fills the requested items and sets `valid_items`.
 *
 * A `struct_size` smaller than ::SONDE_METHOD_INFO_SIZE_1_1 answers INCOMPATIBLE_ABI. Sonde
 * reads the string storage and writes the results only within `struct_size` bytes; the tail
 * of a larger struct than Sonde knows is neither checked nor written.
 * @since 1.1
 */
typedef struct sonde_method_info_t {
    uint32_t struct_size;        /**< sizeof(sonde_method_info_t) as the caller knows it. */
    uint32_t visibility;         /**< VISIBILITY. */
    uint64_t valid_items;        /**< Set by Sonde. */
    sonde_string_t name;         /**< NAME: short name. */
    sonde_string_t class_name;   /**< CLASS_NAME. */
    sonde_string_t full_name;    /**< FULL_NAME. */
    sonde_string_t mangled_name; /**< MANGLED_NAME. */
    sonde_string_t source_file;  /**< SOURCE_FILE. */
    uint32_t source_line;        /**< SOURCE_LINE. */
    uint32_t reserved;           /**< Zero. */
    sonde_module_id_t module;    /**< MODULE_ID. */
    uint64_t address;            /**< ADDRESS: entry address in the process. */
    uint64_t size;               /**< SIZE: symbol size in bytes. */
} sonde_method_info_t;

/**
 * @brief Size of sonde_method_info_t in version 1.1, which introduced it: the smallest
 * struct_size the request accepts.
 * A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.1
 */
#define SONDE_METHOD_INFO_SIZE_1_1 128u

/**
 * @brief Module information; same rules as ::sonde_method_info_t, with
 * ::SONDE_MODULE_INFO_SIZE_1_1 as the smallest `struct_size`.
 * @since 1.1
 */
typedef struct sonde_module_info_t {
    uint32_t struct_size; /**< sizeof(sonde_module_info_t) as the caller knows it. */
    uint32_t loaded;      /**< STATE: 1 while loaded, 0 after unload. */
    uint64_t valid_items; /**< Set by Sonde. */
    sonde_string_t name;  /**< NAME: file name. */
    sonde_string_t path;  /**< PATH: path as the loader knows it (the program's is its /proc/self/exe target). */
    uint64_t address;     /**< ADDRESS: lowest mapped address. */
    uint64_t size;        /**< SIZE: span of the mapped segments in bytes. */
} sonde_module_info_t;

/**
 * @brief Size of sonde_module_info_t in version 1.1, which introduced it: the smallest
 * struct_size the request accepts.
 * A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.1
 */
#define SONDE_MODULE_INFO_SIZE_1_1 64u

/**
 * @brief Thread information; same rules as ::sonde_method_info_t, with
 * ::SONDE_THREAD_INFO_SIZE_1_1 as the smallest `struct_size`.
 * @since 1.1
 */
typedef struct sonde_thread_info_t {
    uint32_t struct_size;  /**< sizeof(sonde_thread_info_t) as the caller knows it. */
    uint32_t alive;        /**< STATE: 1 until the thread ends. */
    uint64_t valid_items;  /**< Set by Sonde. */
    sonde_string_t name;   /**< NAME: the thread's name (its name when it ended, for a dead thread). */
    uint64_t os_thread_id; /**< OS_THREAD_ID. */
    uint32_t stack_depth;  /**< STACK_DEPTH: methods on its shadow stack now. */
    uint32_t reserved;     /**< Zero. */
} sonde_thread_info_t;

/**
 * @brief Size of sonde_thread_info_t in version 1.1, which introduced it: the smallest
 * struct_size the request accepts.
 * A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.1
 */
#define SONDE_THREAD_INFO_SIZE_1_1 48u

/** @brief Client states (::sonde_client_info_t::state). @since 1.1 */
enum sonde_client_state {
    SONDE_CLIENT_STATE_ACTIVE = 0, /**< Instantiated; receives events. */
    SONDE_CLIENT_STATE_FAILED = 1  /**< Loading or instantiation failed; the client was unloaded. */
};

/**
 * @brief What Sonde knows about a client: its state, the status of its loading, and why.
 * Same `struct_size` rules as ::sonde_method_info_t, with ::SONDE_CLIENT_INFO_SIZE_1_1 as the
 * smallest.
 * @since 1.1
 */
typedef struct sonde_client_info_t {
    uint32_t struct_size;   /**< sizeof(sonde_client_info_t) as the caller knows it. */
    uint32_t state;         /**< A ::sonde_client_state value. */
    sonde_status_t status;  /**< SUCCESS, or the status its loading failed with. */
    uint32_t reserved;      /**< Zero. */
    sonde_string_t path;    /**< Path given to ::sonde_load_client, or "" for registered clients. */
    sonde_string_t message; /**< Why it failed (or what the client said with set_message). */
} sonde_client_info_t;

/**
 * @brief Size of sonde_client_info_t in version 1.1, which introduced it: the smallest
 * struct_size ::sonde_get_client_info accepts.
 * A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.1
 */
#define SONDE_CLIENT_INFO_SIZE_1_1 48u

/**
 * @brief The function table a client calls Sonde through (it never links libsonde). Every
 * function takes the caller's client id first; a wrong one answers ILLEGAL_ID. All are
 * thread-safe. Data requests answer PHASE_FAILURE before the client's RUNTIME_INIT event and
 * after SHUTDOWN. The table grows at the end: `struct_size` is Sonde's own sizeof, never less
 * than ::SONDE_API_SIZE_1_1; check that it covers a function appended after that size before
 * using it.
 * @since 1.1
 */
typedef struct sonde_api_t {
    uint32_t struct_size; /**< sizeof this table in the library. */
    uint32_t abi_version; /**< SONDE_CLIENT_ABI_VERSION of the library; refuse with NOT_SUPPORTED if too old. */

    /**
     * @brief Registers (or replaces) the client's observer of one event.
     * @return SUCCESS; ILLEGAL_ID (client); INVALID_ARGUMENT (unknown event); NULL_POINTER
     * (handler); NOT_SUPPORTED (an item the event cannot provide); PHASE_FAILURE (in a fork()
     * child whose parent had another thread inside the client registry at the fork).
     */
    sonde_status_t (*register_event)(sonde_client_id_t client, uint32_t event, uint64_t data_items,
                                     sonde_event_handler_t handler, void *user_data);
    /**
     * @brief Sets the filter of a group (CALL_GRAPH, THREAD, MODULE, or API_CALL from 1.2); only
     * during instantiation. A thread filtered out sends the client no events at all; a module filtered
     * out sends no MODULE events and no CALL_GRAPH events of its methods.
     * @return SUCCESS; ILLEGAL_ID; NULL_POINTER; NOT_SUPPORTED (another group); PHASE_FAILURE
     * (after the instantiate function returned, or in a fork() child as for register_event).
     */
    sonde_status_t (*set_event_group_filter)(sonde_client_id_t client, uint32_t group,
                                             sonde_filter_fn_t should_notify, void *user_data);
    /**
     * @brief Method information: NAME, CLASS_NAME, FULL_NAME, MANGLED_NAME, MODULE_ID,
     * SOURCE_FILE, SOURCE_LINE, ADDRESS, SIZE, VISIBILITY.
     * @return SUCCESS; PARTIAL_INFO (no symbol, or no DWARF for the source items);
     * BUFFER_TOO_SHORT (a string; its actual_size is set, other items are filled); NULL_POINTER;
     * ILLEGAL_ID; NOT_SUPPORTED (an item methods do not have); PHASE_FAILURE;
     * INCOMPATIBLE_ABI (struct_size smaller than ::SONDE_METHOD_INFO_SIZE_1_1); ERROR.
     */
    sonde_status_t (*get_method_info)(sonde_client_id_t client, sonde_method_id_t method,
                                      uint64_t requested, sonde_method_info_t *info);
    /**
     * @brief Module information: NAME, PATH, ADDRESS, SIZE, STATE.
     * @return as get_method_info; PARTIAL_INFO when the module has no file (the vdso).
     */
    sonde_status_t (*get_module_info)(sonde_client_id_t client, sonde_module_id_t module,
                                      uint64_t requested, sonde_module_info_t *info);
    /**
     * @brief Thread information: NAME, OS_THREAD_ID, STACK_DEPTH, STATE. A zero thread handle
     * means the calling thread.
     * @return as get_method_info; PARTIAL_INFO when the name of a live thread cannot be read.
     */
    sonde_status_t (*get_thread_info)(sonde_client_id_t client, sonde_thread_id_t thread,
                                      uint64_t requested, sonde_thread_info_t *info);
    /**
     * @brief The current call stack of a thread (zero handle: the calling one) from its shadow
     * stack, innermost method first. For another running thread it is a snapshot taken while it
     * runs. Methods deeper than the shadow stack's capacity (65,536) are not recorded.
     * @return SUCCESS; PARTIAL_INFO (the stack is deeper than what was recorded);
     * BUFFER_TOO_SHORT; NULL_POINTER; ILLEGAL_ID; PHASE_FAILURE; ERROR (the thread has ended and
     * its stack is gone).
     */
    sonde_status_t (*get_thread_stack)(sonde_client_id_t client, sonde_thread_id_t thread,
                                       sonde_method_array_t *stack);
    /**
     * @brief Ids of every module seen, loaded or not, in order of first load.
     * @return SUCCESS; BUFFER_TOO_SHORT; NULL_POINTER; ILLEGAL_ID; PHASE_FAILURE.
     */
    sonde_status_t (*get_module_list)(sonde_client_id_t client, sonde_module_array_t *modules);
    /**
     * @brief Ids of every thread seen, alive or not, in order of first event.
     * @return SUCCESS; BUFFER_TOO_SHORT; NULL_POINTER; ILLEGAL_ID; PHASE_FAILURE.
     */
    sonde_status_t (*get_thread_list)(sonde_client_id_t client, sonde_thread_array_t *threads);
    /** @brief ::sonde_status_name through the table. */
    const char *(*status_name)(sonde_status_t status);
    /** @brief ::sonde_status_string through the table. */
    const char *(*status_string)(sonde_status_t status);
    /** @brief ::sonde_get_timestamp through the table. */
    uint64_t (*get_timestamp)(void);
    /**
     * @brief Sets the client's message (for example why instantiation refuses), retrievable
     * with ::sonde_get_client_info. Copied; at most 1023 bytes are kept.
     * @return SUCCESS; ILLEGAL_ID; NULL_POINTER.
     */
    sonde_status_t (*set_message)(sonde_client_id_t client, const char *message);
} sonde_api_t;

/**
 * @brief Size of sonde_api_t in version 1.1, which introduced it: every function above is
 * present when struct_size is at least this.
 * A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.1
 */
#define SONDE_API_SIZE_1_1 104u

/**
 * @brief The entry point a client exports. Called once, on the thread that loads it, before or
 * after ::sonde_initialize. Register observers and filters here and return SUCCESS; any other
 * status (NOT_SUPPORTED when `api->abi_version` is too old) makes Sonde unload the client.
 * @since 1.1
 */
typedef sonde_status_t (*sonde_client_instantiate_fn)(const sonde_api_t *api, sonde_client_id_t client_id,
                                                     const char *options);

/** @brief The entry point's name, looked up in the client's object only. @since 1.1 */
#define SONDE_CLIENT_ENTRY_NAME "sonde_client_instantiate"
/**
 * @brief Optional: a client may export `const uint32_t sonde_client_required_abi_version` set
 * to the least client ABI version it needs; Sonde refuses it (INCOMPATIBLE_ABI) when it is
 * newer than the library's, without calling the entry point. Only a definition in the client's
 * own object counts: one that comes from a library the client links is ignored.
 * @since 1.1
 */
#define SONDE_CLIENT_REQUIRED_ABI_NAME "sonde_client_required_abi_version"

SONDE_END_DECLS

/* The program-side functions, declared with the types above (so that including either header
 * gives both). */
#include <sonde/instrument.h>

#endif /* SONDE_CLIENT_H */
