// Non-temporal stores through LLVM's loop vectorizer.
//
// LLVM's vectorizer widens a store marked !nontemporal only if the target can store the vector
// non-temporally at the scalar store's alignment, and x86's vmovntps needs the vector's own
// alignment (32 bytes for AVX2, 64 for AVX-512). A scalar float store is only 4-byte aligned,
// so a loop with marked stores stays scalar, or (when the mark survives some other way) the
// backend splits the vector into scalar movnt stores: either way far slower than plain stores.
// The mark is therefore put on after vectorization: codegen tags the stores stream-stores chose
// with an access group of their own (which the vectorizer carries over to the vector store it
// makes), and finishStreamingStores, at the end of optimisation, marks the tagged vector stores
// whose address it proves aligned to their size. Tagged stores it cannot prove aligned, and the
// scalar remainder of a loop, stay ordinary stores.
#pragma once

#include <cstdint>

namespace llvm {
class MDNode;
class Module;
}  // namespace llvm

namespace texc {

// The access group that tags a streaming store in `M` (created on first use).
llvm::MDNode* streamingStoreTag(llvm::Module& M);
// The access group that tags a load to prefetch `distance` bytes ahead (stream-stores' Loop::prefetch),
// the same way: after vectorization each tagged vector load gets a prefetch of that address.
llvm::MDNode* prefetchedLoadTag(llvm::Module& M, int64_t distance);

// Marks every tagged vector store with a provably aligned address !nontemporal, puts a prefetch
// before every tagged vector load, and removes the tags. Returns the number of stores marked.
int finishStreamingStores(llvm::Module& M);

}  // namespace texc
