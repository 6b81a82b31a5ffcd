"""A call-event fixture in the event text format (src/report/text_source.h) for the command-line
and browser tests: two threads running a recursive fibo, a virtual-call-like dispatch, C++
names with `<`, `>`, `&` and one that looks like an HTML tag, and marks. expected() computes
calls, total and self time per function independently of Sonde (a plain stack walk with
uftrace's rule for recursion), for the tests to compare with."""

METHODS = {
    0: "main",
    1: "fibo",
    2: "work",
    3: "std::vector<int, std::allocator<int> >::push_back(int&&)",
    4: "Shape::draw() const",
    5: "Circle::draw() const",
    6: "operator<<(std::ostream&, Point<3> const&)",
    7: "<img src=x onerror=\"window.__injected=1\">",
    8: "worker_main",
}


class _Thread:
    def __init__(self, tid, os_tid, name, ts):
        self.tid, self.os_tid, self.name, self.ts, self.events = tid, os_tid, name, ts, []

    def enter(self, m):
        self.events.append(("enter", self.ts, m))

    def leave(self, m):
        self.events.append(("leave", self.ts, m))

    def mark(self, text):
        self.events.append(("mark", self.ts, text))

    def fibo(self, n):
        self.enter(1)
        self.ts += 5
        if n >= 2:
            self.fibo(n - 1)
            self.ts += 3
            self.fibo(n - 2)
        self.ts += 2
        self.leave(1)


def threads():
    t1 = _Thread(1, 4100, "main", 1000)
    t1.events.append(("start", t1.ts, None))
    t1.enter(0)
    t1.ts += 100
    t1.enter(2)
    t1.ts += 10
    t1.fibo(12)
    t1.ts += 10
    t1.leave(2)
    t1.mark("checkpoint <1> & co")
    for i in range(3):
        t1.enter(3)
        t1.ts += 40 + i
        t1.leave(3)
    t1.ts += 50
    t1.leave(0)
    t1.ts += 5
    t1.events.append(("end", t1.ts, None))

    t2 = _Thread(2, 4101, "worker <pool>", 1500)
    t2.enter(8)
    for i in range(4):  # one call site, two targets
        t2.enter(4)
        t2.ts += 3
        t2.enter(5 if i % 2 == 0 else 6)
        t2.ts += 20 + i
        t2.leave(5 if i % 2 == 0 else 6)
        t2.ts += 2
        t2.leave(4)
    t2.enter(2)
    t2.ts += 1
    t2.fibo(9)
    t2.leave(2)
    t2.enter(7)
    t2.ts += 30
    t2.leave(7)
    t2.ts += 7
    t2.leave(8)
    return [t1, t2]


def write(path):
    with open(path, "w", encoding="utf-8") as f:
        f.write("sonde-events 1\n# written by tests/report/fixture.py\npid 4100\n")
        for i, name in METHODS.items():
            f.write("method %d prog %s %d %s\n" % (i, "fibo.c" if i == 1 else "-", 3 if i == 1 else 0, name))
        for t in threads():
            f.write("thread %d %d %s\n" % (t.tid, t.os_tid, t.name))
            for kind, ts, arg in t.events:
                if kind in ("enter", "leave"):
                    f.write("%s %d %d\n" % (kind, ts, arg))
                elif kind == "mark":
                    f.write("mark %d %s\n" % (ts, arg))
                else:
                    f.write("%s %d\n" % (kind, ts))


def expected():
    """{name: [calls, total_ns, self_ns]} over all threads, and per thread id."""
    total, per_thread = {}, {}
    for t in threads():
        mine = per_thread.setdefault(t.tid, {})
        stack = []  # [method, begin, child_ns]
        for kind, ts, arg in t.events:
            if kind == "enter":
                stack.append([arg, ts, 0])
            elif kind == "leave":
                m, begin, child = stack.pop()
                dur = ts - begin
                if stack:
                    stack[-1][2] += dur
                outermost = all(f[0] != m for f in stack)
                for d in (total, mine):
                    s = d.setdefault(METHODS[m], [0, 0, 0])
                    s[0] += 1
                    s[1] += dur if outermost else 0
                    s[2] += dur - child
    return total, per_thread
