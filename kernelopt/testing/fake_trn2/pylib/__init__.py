"""Stand-ins for the Neuron SDK's Python packages, one folder per environment
content: ``current`` (the nki wheel with nki.compiler), ``older``
(neuronxcc.nki_standalone and an nki for kernel imports), ``runtime`` (nrtpy),
``baseline`` (nkipy).

These folders are put on PYTHONPATH only by the fake's activate scripts;
nothing imports them otherwise, so the fakes never shadow a real SDK by accident.
"""
