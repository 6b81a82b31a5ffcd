int ok(int a);
typedef int t;
t bad(struct s);
int later(void);
