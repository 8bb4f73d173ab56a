;; Start-up code for the test world (sdasgb syntax, linked first with --no-std-crt0).
;;
;; SDCC's stock sm83 crt0 targets its regression emulator: its zero-fill loop only reads,
;; so globals would start with whatever the RAM held. The test world must be deterministic
;; from power-on, hence this crt0 clears all of WRAM and HRAM with real writes.

        .module crt0
        .globl  _main

        .area   _HEADER (ABS)

        ;; Nothing uses rst; an accidental jump into $FF filler lands in rst $38, which hangs
        ;; visibly instead of running garbage.
        .org    0x38
        jp      hang

        ;; VBlank only wakes the main loop from `halt`; all frame work happens in C after it.
        .org    0x40
        reti
        .org    0x48
        reti
        .org    0x50
        reti
        .org    0x58
        reti
        .org    0x60
        reti

        .org    0x100
        nop
        jp      init
        ;; $104-$14F is the cartridge header; makebin -Z writes logo, title and checksums.

        .org    0x150
init:
        di
        ld      sp, #0xE000

        ;; WRAM $C000-$DFFF: the fixed game-state table, C globals and the shadow OAM.
        ld      hl, #0xC000
        ld      de, #0x2000
clear_wram:
        xor     a
        ld      (hl+), a
        dec     de
        ld      a, d
        or      a, e
        jr      nz, clear_wram

        ;; HRAM $FF80-$FFFE (the OAM DMA routine is copied there below).
        ld      hl, #0xFF80
        ld      c, #0x7F
        xor     a
clear_hram:
        ld      (hl+), a
        dec     c
        jr      nz, clear_hram

        call    gsinit

        ;; During OAM DMA the CPU can only fetch from HRAM, so the trigger loop lives there.
        ld      hl, #dma_routine
        ld      de, #0xFF80
        ld      c, #(dma_routine_end - dma_routine)
copy_dma:
        ld      a, (hl+)
        ld      (de), a
        inc     de
        dec     c
        jr      nz, copy_dma

        call    _main
hang:
        halt
        nop
        jr      hang

        ;; Ordering of segments for the linker.
        .area   _HOME
        .area   _CODE
        .area   _INITIALIZER
        .area   _GSINIT
        .area   _GSFINAL

        .area   _DATA
        .area   _INITIALIZED
        .area   _BSEG
        .area   _BSS
        .area   _HEAP

        .area   _CODE
        ;; Copied to $FF80 and called from C as oam_dma(). Source page $CE = shadow OAM at
        ;; $CE00 (see screen.h); 40 iterations of dec/jr cover the 160-cycle transfer.
dma_routine:
        ld      a, #0xCE
        ldh     (0x46), a
        ld      a, #40
dma_wait:
        dec     a
        jr      nz, dma_wait
        ret
dma_routine_end:

        .area   _GSINIT
gsinit::
        ;; Explicitly initialised globals (WRAM is already zero, which covers the rest).
        ld      de, #s__INITIALIZED
        ld      hl, #s__INITIALIZER
        ld      bc, #l__INITIALIZER
copy_init:
        ld      a, b
        or      a, c
        jr      z, gsinit_done
        ld      a, (hl+)
        ld      (de), a
        inc     de
        dec     bc
        jr      copy_init
gsinit_done:

        .area   _GSFINAL
        ret
