// Tests of the C++ helper sonde/tool.hpp, compiled as C++11: a sonde::tool subclass runs
// serially and in parallel, its exceptions become tool errors with their message (per shard in
// parallel mode; a results_json() that throws gives no results, not "{}"), and destroy()
// deletes the object.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

extern "C" {
#include <cmocka.h>
}
#include <sonde/tool.hpp>

namespace {

int live_tools = 0;

class counter final : public sonde::tool {
public:
    explicit counter(uint64_t throw_at) : throw_at_(throw_at) { ++live_tools; }
    ~counter() override { --live_tools; }
    const char *name() const override { return "counter"; }
    bool initialize(uint32_t num_shards) override {
        shards_ = num_shards;
        return true;
    }
    bool process_memrefs(const sonde_memref_t *m, size_t n) override {
        for (size_t i = 0; i < n; ++i) {
            if (m[i].address == throw_at_) throw std::runtime_error("serial boom");
            ++serial_;
        }
        return true;
    }
    bool parallel_shard_supported() override { return true; }
    bool parallel_shard_init(uint32_t shard, void *, void **shard_data) override {
        *shard_data = &per_shard_[shard];
        return true;
    }
    bool parallel_shard_memrefs(void *sd, const sonde_memref_t *m, size_t n) override {
        for (size_t i = 0; i < n; ++i) {
            if (m[i].address == throw_at_)
                throw std::runtime_error("shard boom at " + std::to_string(m[i].address));
            ++*static_cast<uint64_t *>(sd);
        }
        return true;
    }
    std::string results_json() override {
        if (results_throw_ == 1) throw std::runtime_error("no results today");
        if (results_throw_ == 2) throw std::bad_alloc();
        return "{\"serial\": " + std::to_string(serial_) + ", \"shard0\": " + std::to_string(per_shard_[0]) +
               ", \"shard1\": " + std::to_string(per_shard_[1]) + ", \"shards\": " + std::to_string(shards_) +
               "}";
    }

    int results_throw_ = 0;  // 1: results_json throws runtime_error, 2: std::bad_alloc

private:
    uint64_t throw_at_;
    uint32_t shards_ = 0;
    uint64_t serial_ = 0;
    uint64_t per_shard_[2] = {0, 0};
};

sonde_memref_t refs0[3];
sonde_memref_t refs1[2];

sonde_analyzer_t *make(uint64_t throw_at, bool parallel, int results_throw = 0) {
    for (int i = 0; i < 3; ++i) {
        std::memset(&refs0[i], 0, sizeof refs0[i]);
        refs0[i].address = 10 + i;
    }
    for (int i = 0; i < 2; ++i) {
        std::memset(&refs1[i], 0, sizeof refs1[i]);
        refs1[i].shard = 1;
        refs1[i].address = 20 + i;
    }
    sonde_analyzer_t *a = nullptr;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    counter *c = new counter(throw_at);
    c->results_throw_ = results_throw;
    assert_int_equal(sonde_analyzer_add_tool_ops(a, c->table(), c), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, refs0, 3, nullptr), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, refs1, 2, nullptr), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_parallel(a, parallel), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_workers(a, 2), SONDE_STATUS_SUCCESS);
    return a;
}

std::string json_of(sonde_analyzer_t *a) {
    char buf[256];
    size_t need = 0;
    assert_int_equal(sonde_analyzer_results_json(a, buf, sizeof buf, &need), SONDE_STATUS_SUCCESS);
    std::string s;
    for (const char *p = buf; *p; ++p)
        if (*p != ' ' && *p != '\n') s += *p;
    return s;
}

void test_runs(void **) {
    sonde_analyzer_t *a = make(0, false);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    assert_string_equal(json_of(a).c_str(),
                        "{\"counter\":{\"serial\":5,\"shard0\":0,\"shard1\":0,\"shards\":2}}");
    sonde_analyzer_destroy(a);
    assert_int_equal(live_tools, 0);
    a = make(0, true);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    assert_string_equal(json_of(a).c_str(),
                        "{\"counter\":{\"serial\":0,\"shard0\":3,\"shard1\":2,\"shards\":2}}");
    sonde_analyzer_destroy(a);
    assert_int_equal(live_tools, 0);
}

void test_exceptions_become_errors(void **) {
    sonde_analyzer_t *a = make(11, false);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_ERROR_TOOL);
    assert_string_equal(sonde_analyzer_error(a), "counter: serial boom");
    sonde_analyzer_destroy(a);
    a = make(21, true);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_ERROR_TOOL);
    assert_string_equal(sonde_analyzer_error(a), "counter: shard boom at 21");
    sonde_analyzer_destroy(a);
    assert_int_equal(live_tools, 0);
}

// results_json() that throws: the table answers NULL, and the analyzer ERROR_TOOL with the
// exception's message instead of empty results with SUCCESS.
void test_results_json_exception(void **) {
    const struct {
        int how;
        const char *error;
    } cases[] = {{1, "counter: no results today"}, {2, "counter: std::bad_alloc"}};
    for (const auto &c : cases) {
        sonde_analyzer_t *a = make(0, true, c.how);
        assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
        char buf[256];
        size_t need = 0;
        assert_int_equal(sonde_analyzer_results_json(a, buf, sizeof buf, &need), SONDE_STATUS_ERROR_TOOL);
        assert_string_equal(sonde_analyzer_error(a), c.error);
        sonde_analyzer_destroy(a);
    }
    assert_int_equal(live_tools, 0);
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs),
        cmocka_unit_test(test_exceptions_become_errors),
        cmocka_unit_test(test_results_json_exception),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
