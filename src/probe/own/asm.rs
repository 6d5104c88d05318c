//! BPF instructions written by reqlife: an encoder with labels for forward jumps, enough for
//! the programs of [`super::programs`] (64-bit ALU, loads and stores, helper calls, map
//! references, jumps, an atomic add).

/// A register: r0 (return value), r1-r5 (arguments, clobbered by calls), r6-r9 (kept across
/// calls), r10 (the frame pointer, read only).
pub type Reg = u8;

/// The frame pointer.
pub const FP: Reg = 10;

/// A jump's condition (the `BPF_JMP` class's operation bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cond {
    /// Always (`ja`).
    Always = 0x00,
    Eq = 0x10,
    Ne = 0x50,
    /// Signed `>=`.
    Sge = 0x70,
    /// Signed `<=`.
    Sle = 0xd0,
}

/// A size of a load or store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    W = 0x00,
    H = 0x08,
    DW = 0x18,
}

/// A place in a program that jumps go to, placed once by [`Asm::place`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label(usize);

/// A program being written: its instructions, and its jumps waiting for their labels.
#[derive(Debug, Default)]
pub struct Asm {
    code: Vec<u64>,
    labels: Vec<Option<usize>>,
    jumps: Vec<(usize, Label)>,
}

/// One instruction: opcode, registers, offset, immediate (little-endian layout).
fn ins(code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> u64 {
    u64::from(code)
        | (u64::from(dst & 0xf) << 8)
        | (u64::from(src & 0xf) << 12)
        | (u64::from(off as u16) << 16)
        | (u64::from(imm as u32) << 32)
}

impl Asm {
    /// A label not yet placed.
    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// `label` is here (the next instruction).
    pub fn place(&mut self, label: Label) {
        self.labels[label.0] = Some(self.code.len());
    }

    /// `dst = src`.
    pub fn mov(&mut self, dst: Reg, src: Reg) {
        self.code.push(ins(0xbf, dst, src, 0, 0));
    }

    /// `dst = imm` (sign-extended).
    pub fn mov_imm(&mut self, dst: Reg, imm: i32) {
        self.code.push(ins(0xb7, dst, 0, 0, imm));
    }

    /// `dst += imm`.
    pub fn add_imm(&mut self, dst: Reg, imm: i32) {
        self.code.push(ins(0x07, dst, 0, 0, imm));
    }

    /// `dst -= src`.
    pub fn sub(&mut self, dst: Reg, src: Reg) {
        self.code.push(ins(0x1f, dst, src, 0, 0));
    }

    /// `dst += src`.
    pub fn add(&mut self, dst: Reg, src: Reg) {
        self.code.push(ins(0x0f, dst, src, 0, 0));
    }

    /// `dst |= src`.
    pub fn or(&mut self, dst: Reg, src: Reg) {
        self.code.push(ins(0x4f, dst, src, 0, 0));
    }

    /// `dst &= imm`.
    pub fn and_imm(&mut self, dst: Reg, imm: i32) {
        self.code.push(ins(0x57, dst, 0, 0, imm));
    }

    /// `dst <<= imm`.
    pub fn lsh_imm(&mut self, dst: Reg, imm: i32) {
        self.code.push(ins(0x67, dst, 0, 0, imm));
    }

    /// `dst >>= imm` (logical).
    pub fn rsh_imm(&mut self, dst: Reg, imm: i32) {
        self.code.push(ins(0x77, dst, 0, 0, imm));
    }

    /// `dst = *(size *)(src + off)`.
    pub fn load(&mut self, size: Size, dst: Reg, src: Reg, off: i16) {
        self.code.push(ins(0x61 | size as u8, dst, src, off, 0));
    }

    /// `*(size *)(dst + off) = src`.
    pub fn store(&mut self, size: Size, dst: Reg, off: i16, src: Reg) {
        self.code.push(ins(0x63 | size as u8, dst, src, off, 0));
    }

    /// `*(size *)(dst + off) = imm`.
    pub fn store_imm(&mut self, size: Size, dst: Reg, off: i16, imm: i32) {
        self.code.push(ins(0x62 | size as u8, dst, 0, off, imm));
    }

    /// `lock *(u64 *)(dst + off) += src`.
    pub fn atomic_add(&mut self, dst: Reg, off: i16, src: Reg) {
        self.code.push(ins(0xdb, dst, src, off, 0));
    }

    /// `dst = &(stack + off)`: a pointer into this program's stack.
    pub fn stack(&mut self, dst: Reg, off: i16) {
        self.mov(dst, FP);
        self.add_imm(dst, i32::from(off));
    }

    /// `dst` = the map of file descriptor `fd` (a two-word load the kernel resolves).
    pub fn map(&mut self, dst: Reg, fd: i32) {
        self.code.push(ins(0x18, dst, 1, 0, fd));
        self.code.push(0);
    }

    /// Calls helper `id` (arguments in r1-r5, its result in r0).
    pub fn call(&mut self, id: i32) {
        self.code.push(ins(0x85, 0, 0, 0, id));
    }

    /// `if dst <cond> imm goto to` (64-bit).
    pub fn jump_imm(&mut self, cond: Cond, dst: Reg, imm: i32, to: Label) {
        self.jumps.push((self.code.len(), to));
        self.code.push(ins(0x05 | cond as u8, dst, 0, 0, imm));
    }

    /// The same on the lower 32 bits of `dst` (`BPF_JMP32`).
    pub fn jump32_imm(&mut self, cond: Cond, dst: Reg, imm: i32, to: Label) {
        self.jumps.push((self.code.len(), to));
        self.code.push(ins(0x06 | cond as u8, dst, 0, 0, imm));
    }

    /// `goto to`.
    pub fn goto(&mut self, to: Label) {
        self.jump_imm(Cond::Always, 0, 0, to);
    }

    /// `return 0`.
    pub fn exit0(&mut self) {
        self.mov_imm(0, 0);
        self.code.push(ins(0x95, 0, 0, 0, 0));
    }

    /// The instructions, every jump's offset filled in; `None` if a label was never placed
    /// or a jump is out of reach.
    pub fn finish(mut self) -> Option<Vec<u64>> {
        for &(at, to) in &self.jumps {
            let target = self.labels[to.0]?;
            let off = i16::try_from(target as i64 - at as i64 - 1).ok()?;
            self.code[at] = (self.code[at] & !0xffff_0000) | (u64::from(off as u16) << 16);
        }
        Some(self.code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_are_encoded_as_the_kernel_reads_them() {
        let mut a = Asm::default();
        let end = a.label();
        a.mov(6, 1); // bf 16 0000 00000000
        a.load(Size::DW, 7, 6, 8); // 79 67 0800
        a.jump32_imm(Cond::Sle, 7, 0, end); // d6 07 ....
        a.map(1, 5); // 18 11 0000 05000000, then 0
        a.place(end);
        a.exit0();
        let code = a.finish().unwrap();
        assert_eq!(code[0], 0x0000_0000_0000_16bf);
        assert_eq!(code[1], 0x0000_0000_0008_6779);
        // Over the map's two words, to `r0 = 0`.
        assert_eq!(code[2], 0x0000_0000_0002_07d6);
        assert_eq!(code[3], 0x0000_0005_0000_1118);
        assert_eq!(code[4], 0);
        assert_eq!(code[5], 0x0000_0000_0000_00b7);
        assert_eq!(code[6], 0x0000_0000_0000_0095);
    }

    #[test]
    fn a_label_never_placed_is_refused() {
        let mut a = Asm::default();
        let nowhere = a.label();
        a.goto(nowhere);
        assert!(a.finish().is_none());
    }
}
