/*
 * ondisk.h - the header every metadata block starts with.
 *
 * The on-disk format is little-endian (base/bytes.h reads and writes it).  Every metadata block (superblock,
 * journal blocks, inode table blocks, bitmap blocks, B+tree nodes) begins
 * with struct ref_blkhdr: a magic naming its type, a CRC32C of the whole
 * block computed with the crc field zeroed, its own block number (catches
 * misdirected writes) and its owner (an inode number, or 0 for the fs).
 */
#ifndef FSORACLE_REF_ONDISK_H
#define FSORACLE_REF_ONDISK_H

#include <stdint.h>

#include "base/bytes.h"

/* Common metadata block header: 24 bytes. */
#define BLKHDR_MAGIC  0   /* u32 */
#define BLKHDR_CRC    4   /* u32: crc32c of the block, this field zeroed */
#define BLKHDR_BLKNO  8   /* u64: where this block lives                 */
#define BLKHDR_OWNER 16   /* u64: inode number, or 0                     */
#define BLKHDR_SIZE  24

/* Magic numbers, one per block type ("FSO" + type letter). */
#define MAGIC_SUPER   0x46534f53u /* 'FSOS' superblock                  */
#define MAGIC_JHDR    0x46534f4au /* 'FSOJ' journal header              */
#define MAGIC_JDESC   0x46534f44u /* 'FSOD' journal descriptor          */
#define MAGIC_JCOMMIT 0x46534f43u /* 'FSOC' journal commit              */
#define MAGIC_JREVOKE 0x46534f56u /* 'FSOV' journal revoke records      */
#define MAGIC_INODES  0x46534f49u /* 'FSOI' inode table block           */
#define MAGIC_BITMAP  0x46534f46u /* 'FSOF' free-space bitmap block     */
#define MAGIC_RTBITMAP 0x46534f52u /* 'FSOR' realtime free-space bitmap */
#define MAGIC_BMBT    0x46534f42u /* 'FSOB' data-fork extent B+tree     */
#define MAGIC_REFCBT  0x46534f4bu /* 'FSOK' refcount B+tree            */
#define MAGIC_COWSBT  0x46534f57u /* 'FSOW' COW staging extent B+tree   */

#endif
