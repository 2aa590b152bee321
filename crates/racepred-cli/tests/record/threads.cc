// Race-free C++: std::thread, std::mutex with std::lock_guard, std::condition_variable,
// std::atomic, std::shared_mutex, a function-local static, std::vector and new/delete.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

struct Shape {
  virtual ~Shape() {}
  virtual int sides() const = 0;
};
struct Square : Shape {
  int sides() const override { return 4; }
};

std::mutex m;
std::condition_variable cv;
std::shared_mutex sm;
std::vector<int> items;
std::atomic<int> ticket{0};
std::atomic<bool> published{false};
int payload;
bool go;
int shared_table[8];

static int &config() {
  static int value = 5;  // initialised once, under __cxa_guard
  return value;
}

int main() {
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; i++) {
    ts.emplace_back([i] {
      {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [] { return go; });
        items.push_back(i + config());
      }
      ticket.fetch_add(1);
      {
        std::unique_lock<std::shared_mutex> w(sm);
        shared_table[i]++;
      }
      {
        std::shared_lock<std::shared_mutex> r(sm);
        int s = 0;
        for (int k = 0; k < 8; k++) s += shared_table[k];
        (void)s;
      }
      std::unique_ptr<Shape> sh(new Square);
      if (sh->sides() != 4) std::abort();
    });
  }
  std::thread pub([] {
    payload = 11;
    published.store(true, std::memory_order_release);
  });
  {
    std::lock_guard<std::mutex> l(m);
    go = true;
  }
  cv.notify_all();
  while (!published.load(std::memory_order_acquire)) {
  }
  int p = payload;
  for (auto &t : ts) t.join();
  pub.join();
  return items.size() == 4 && ticket.load() == 4 && p == 11 ? 0 : 1;
}
