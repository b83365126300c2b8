#include "compiler/loops/PerfectNest.h"

namespace texc::loops {

std::vector<Loop*> perfectNest(Stmt& s, size_t maxDepth) {
  std::vector<Loop*> nest;
  Stmt* at = &s;
  while (Loop* l = at->getIf<Loop>()) {
    nest.push_back(l);
    if ((maxDepth && nest.size() == maxDepth) || l->body.size() != 1) break;
    at = &l->body[0];
  }
  return nest;
}

std::vector<const Loop*> perfectNest(const Stmt& s, size_t maxDepth) {
  std::vector<const Loop*> out;
  for (Loop* l : perfectNest(const_cast<Stmt&>(s), maxDepth)) out.push_back(l);
  return out;
}

}  // namespace texc::loops
