/**
 * Kernel layer, extents: the key-value extent clients read one-sided (its image, checksum and
 * current word) and the allocator that carves a server's extent regions into them. The kv face
 * keeps out-of-line pairs in them, the tree face its leaves' pairs.
 */
package io.ferrite.kernel.extent;
