#pragma once
// Fixed-capacity ring buffer: a sampler at 100 Hz for hours must not grow without bound.
// Index 0 is the oldest element still held.
#include <cstddef>
#include <vector>

namespace ts::sample {

template <class T>
class RingBuffer {
 public:
  explicit RingBuffer(size_t capacity = 0) : data_(capacity) {}

  void push(const T& v) {
    if (data_.empty()) return;
    data_[(start_ + size_) % data_.size()] = v;
    if (size_ < data_.size()) {
      ++size_;
    } else {
      start_ = (start_ + 1) % data_.size();
    }
  }
  size_t size() const { return size_; }
  size_t capacity() const { return data_.size(); }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return data_[(start_ + i) % data_.size()]; }
  const T& back() const { return (*this)[size_ - 1]; }
  void clear() { start_ = size_ = 0; }
  // The newest n elements (or all), oldest first.
  std::vector<T> last(size_t n) const {
    if (n > size_) n = size_;
    std::vector<T> out;
    out.reserve(n);
    for (size_t i = size_ - n; i < size_; ++i) out.push_back((*this)[i]);
    return out;
  }

 private:
  std::vector<T> data_;
  size_t start_ = 0, size_ = 0;
};

}  // namespace ts::sample
