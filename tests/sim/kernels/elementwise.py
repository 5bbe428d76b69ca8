import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def axpb_relu(x, y, scale):
    # out = relu(x * y * scale[p] + 0.5) - 1 / x  (scale is one value per row)
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    yt = nl.ndarray((P, F), dtype=y.dtype, buffer=nl.sbuf)
    st = nl.ndarray((P, 1), dtype=scale.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=xt, src=x)
    nisa.dma_copy(dst=yt, src=y)
    nisa.dma_copy(dst=st, src=scale)
    prod = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=prod, data1=xt, data2=yt, op=nl.multiply)
    half = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=half, value=0.5)
    act = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=act, op=nl.relu, data=prod, bias=half, scale=st)
    inv = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    # 1 / x: the operand goes first, so the operation is reversed.
    nisa.tensor_scalar(dst=inv, data=xt, op0=nl.divide, operand0=1.0, reverse0=True)
    res = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=res, data1=act, data2=inv, op=nl.subtract)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def scale_shift(x):
    # out = (x * 2 - 3) via the two-step tensor_scalar form
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    r = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=r, data=t, op0=nl.multiply, operand0=2.0, op1=nl.subtract, operand1=3.0)
    nisa.dma_copy(dst=out, src=r)
    return out
