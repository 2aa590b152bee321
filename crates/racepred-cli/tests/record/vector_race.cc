// A race with a std::vector's destruction: a worker stores into the vector's buffer, and
// main destroys the vector (its destructor frees the buffer) in a function of its own,
// without synchronising with the worker (the relaxed flag only makes this run's order
// deterministic; it orders nothing).
#include <atomic>
#include <thread>
#include <vector>

std::vector<long> *items;
std::atomic<int> flag;

void work() {
  (*items)[2] = 1; // RACE-STORE
  flag.store(1, std::memory_order_relaxed);
}

__attribute__((noinline)) void destroy_items() {
  delete items; // RACE-DESTROY
}

int main() {
  items = new std::vector<long>(8);
  std::thread t(work);
  while (!flag.load(std::memory_order_relaxed)) {
  }
  destroy_items(); // CALL-DESTROY
  t.join();
  return 0;
}
