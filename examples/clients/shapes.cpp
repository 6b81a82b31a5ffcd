// A small C++ program for the class filter example: two classes in a namespace and free
// functions. Built with -finstrument-functions. `shapes N` computes N circles and N squares.
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace geo {

class Circle {
public:
    explicit Circle(double r) : r_(r) {}
    double area() const { return 3.14159 * r_ * r_; }
    double perimeter() const { return 2 * 3.14159 * r_; }

private:
    double r_;
};

class Square {
public:
    explicit Square(double s) : s_(s) {}
    double area() const { return s_ * s_; }

private:
    double s_;
};

}  // namespace geo

static double total(const std::vector<geo::Circle> &cs, const std::vector<geo::Square> &ss) {
    double t = 0;
    for (const auto &c : cs) t += c.area() + c.perimeter();
    for (const auto &s : ss) t += s.area();
    return t;
}

int main(int argc, char **argv) {
    const int n = argc > 1 ? std::atoi(argv[1]) : 10;
    std::vector<geo::Circle> cs;
    std::vector<geo::Square> ss;
    cs.reserve(static_cast<size_t>(n));
    ss.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        cs.emplace_back(i);
        ss.emplace_back(i);
    }
    std::printf("total %.1f\n", total(cs, ss));
    return 0;
}
