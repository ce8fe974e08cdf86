#pragma once
// A bounded blocking queue between two pipeline stages: push waits while full, pop waits while
// empty; close() ends the stream after what is queued, abort() wakes everyone and drops it all
// (an error in any stage).
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

namespace vkml::media {

template <class T>
class BoundedQueue {
public:
    explicit BoundedQueue(size_t capacity) : capacity_(capacity ? capacity : 1) {}

    // False when the queue was aborted (the item is dropped).
    bool push(T item) {
        std::unique_lock lock(mutex_);
        not_full_.wait(lock, [&] { return items_.size() < capacity_ || aborted_; });
        if (aborted_) return false;
        items_.push_back(std::move(item));
        not_empty_.notify_one();
        return true;
    }
    // nullopt once closed and drained, or aborted.
    std::optional<T> pop() {
        std::unique_lock lock(mutex_);
        not_empty_.wait(lock, [&] { return !items_.empty() || closed_ || aborted_; });
        if (aborted_ || items_.empty()) return std::nullopt;
        T item = std::move(items_.front());
        items_.pop_front();
        not_full_.notify_one();
        return item;
    }
    void close() {
        std::lock_guard lock(mutex_);
        closed_ = true;
        not_empty_.notify_all();
    }
    void abort() {
        std::lock_guard lock(mutex_);
        aborted_ = true;
        items_.clear();
        not_empty_.notify_all();
        not_full_.notify_all();
    }

private:
    std::mutex mutex_;
    std::condition_variable not_full_, not_empty_;
    std::deque<T> items_;
    size_t capacity_;
    bool closed_ = false, aborted_ = false;
};

} // namespace vkml::media
