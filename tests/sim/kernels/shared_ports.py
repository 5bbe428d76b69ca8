import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def shared_ports(a, b, memory):
    # Independent work for two engines at once, on the memory the pair of engines
    # shares on NeuronCore-v2: with memory="sbuf" VectorE and GpSimd each add two SBUF
    # tiles; with memory="psum" VectorE and ScalarE each copy a part of one tile into PSUM.
    ta = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.sbuf)
    tb = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ta, src=a)
    nisa.dma_copy(dst=tb, src=b)
    out = nl.ndarray((2, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    if memory == "sbuf":
        first = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.sbuf)
        second = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=first, data1=ta, data2=ta, op=nl.add, engine=nisa.engine.vector)
        nisa.tensor_tensor(dst=second, data1=tb, data2=tb, op=nl.add, engine=nisa.engine.gpsimd)
    else:
        first = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        second = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.tensor_copy(dst=first, src=ta[:, 0:512], engine=nisa.engine.vector)
        nisa.tensor_copy(dst=second, src=ta[:, 512:1024], engine=nisa.engine.scalar)
    for i, tile in enumerate((first, second)):
        held = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=held, src=tile[:, 0:512], engine=nisa.engine.scalar)
        nisa.dma_copy(dst=out[i], src=held)
    return out
