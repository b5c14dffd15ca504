// Module TonearmLibrary.
