// A data race in C++: two std::threads update a shared total without the mutex that
// guards the rest of the state.
#include <mutex>
#include <thread>
#include <vector>

std::mutex m;
std::vector<int> log_;
long total;

void work(int id) {
  {
    std::lock_guard<std::mutex> l(m);
    log_.push_back(id);
  }
  total += id; // RACE-TOTAL
}

int main() {
  std::thread a(work, 1), b(work, 2);
  a.join();
  b.join();
  return total == 3 ? 0 : 1;
}
