// A race with delete: a worker updates an object that main deletes without synchronising
// with it (the relaxed flag only makes this run's order deterministic; it orders nothing).
#include <atomic>
#include <thread>

struct Node {
  long value[4];
};

Node *node;
std::atomic<int> flag;

void work() {
  node->value[2] = 1; // RACE-USE
  flag.store(1, std::memory_order_relaxed);
}

int main() {
  node = new Node();
  std::thread t(work);
  while (!flag.load(std::memory_order_relaxed)) {
  }
  delete node; // RACE-DELETE
  t.join();
  return 0;
}
