//! Loop devices (linux/loop.h): bind a file to `/dev/loopN`, grow it, unbind it, and find
//! the devices already bound to a file. The ioctls are the only unsafe code here; each call
//! passes a file descriptor we own and, where the kernel reads or writes a struct, a pointer
//! to a properly sized `#[repr(C)]` value that lives across the call.

/// Unbinding and waiting for the kernel: [`LoopDevice::release`], [`release::serving`].
pub mod release;
#[cfg(test)]
mod tests;

mod device;
pub use device::*;
