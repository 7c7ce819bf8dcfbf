//! Reading fields of an on-disk header: a magic at an offset, little- and big-endian
//! integers. Out of range reads are no match / zero, so a short head is never a panic.

pub fn at(buf: &[u8], off: usize, magic: &[u8]) -> bool {
    buf.get(off..off + magic.len()) == Some(magic)
}

pub fn le32(buf: &[u8], off: usize) -> u64 {
    buf.get(off..off + 4).map_or(0, |b| {
        u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    })
}

pub fn le64(buf: &[u8], off: usize) -> u64 {
    buf.get(off..off + 8)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
}

pub fn be32(buf: &[u8], off: usize) -> u64 {
    buf.get(off..off + 4).map_or(0, |b| {
        u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    })
}

pub fn be64(buf: &[u8], off: usize) -> u64 {
    buf.get(off..off + 8)
        .map_or(0, |b| u64::from_be_bytes(b.try_into().unwrap_or([0; 8])))
}
