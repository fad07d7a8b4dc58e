// The one registry type every tool keeps its rules in: name (an op type, a pass name) -> rule.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace common {

/// Rules by name. Families register into it once at startup; lookups are by name, listings in
/// registration order (`entries`, e.g. a pass pipeline) or sorted (`names`, `--list-ops`). A
/// second rule for a name is refused: the first one stays and the name is kept in `duplicates`.
template <class Rule>
class Registry {
 public:
  struct Entry {
    std::string name;
    Rule rule;
  };

  /// Registers `rule` under `name`; false (nothing changed) when `name` already has a rule.
  bool add(std::string_view name, Rule rule) {
    if (index_.count(name) != 0) {
      duplicates_.emplace_back(name);
      return false;
    }
    index_.emplace(std::string(name), entries_.size());
    entries_.push_back({std::string(name), std::move(rule)});
    return true;
  }
  /// `add` for each pair, in order.
  void add(std::initializer_list<std::pair<std::string_view, Rule>> rules) {
    for (const auto& [name, rule] : rules) add(name, rule);
  }

  /// The rule registered under `name`, or null.
  const Rule* find(std::string_view name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &entries_[it->second].rule;
  }
  bool contains(std::string_view name) const { return index_.count(name) != 0; }
  size_t size() const { return entries_.size(); }

  /// Every rule in registration order.
  const std::vector<Entry>& entries() const { return entries_; }
  /// Every registered name, sorted.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(index_.size());
    for (const auto& [name, i] : index_) out.push_back(name);
    return out;
  }
  /// Names registered more than once (each refused registration once), in registration order.
  const std::vector<std::string>& duplicates() const { return duplicates_; }

 private:
  std::vector<Entry> entries_;
  std::map<std::string, size_t, std::less<>> index_;
  std::vector<std::string> duplicates_;
};

}  // namespace common
